# The README's commands. Everything installs into the repo (.venv, .tools): nothing global.
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV := .venv
PY := $(VENV)/bin/python
TOOLS := .tools
UV := $(TOOLS)/venv/bin/uv
SAM := $(TOOLS)/bin/sam
PYTHON_FOR_VENV := $(shell scripts/find-python.sh)
export PYTHONPATH := $(CURDIR)/layers/common/python:$(CURDIR)
export SAM_CLI_TELEMETRY := 0
export AWS_DEFAULT_REGION ?= us-east-1
FN ?=
EVENT ?=
PORT ?= 3000

.PHONY: help setup demo test lint typecheck unit template build invoke serve bench clean

help:
	@echo "make demo    run the product locally on embedded defaults (no AWS, no key, no Docker)"
	@echo "make test    ruff, mypy, pytest, cfn-lint, sam validate --lint, sam build"
	@echo "make invoke FN=<LogicalId> EVENT=<file>   invoke one function like 'sam local invoke'"
	@echo "make serve [PORT=3000]   the template's API on 127.0.0.1"
	@echo "make bench   benchmarks with their baselines and peers"

# Set-up output goes to stderr so that `make invoke` keeps stdout for the JSON result.
$(UV):
	@python3 -m venv $(TOOLS)/venv >&2
	@$(TOOLS)/venv/bin/pip install --quiet --disable-pip-version-check uv >&2

$(VENV)/.installed: pyproject.toml | $(UV)
	@echo "setting up $(VENV) with $(PYTHON_FOR_VENV)" >&2
	@$(UV) venv --quiet --allow-existing -p $(PYTHON_FOR_VENV) $(VENV) >&2
	@$(UV) pip install --quiet -p $(PY) -r pyproject.toml --extra dev >&2
	@touch $@

# aws-sam-cli pins boto3 and pydantic: it lives in its own tool environment.
$(SAM): | $(UV)
	@UV_TOOL_DIR=$(CURDIR)/$(TOOLS)/uv-tools UV_TOOL_BIN_DIR=$(CURDIR)/$(TOOLS)/bin $(UV) tool install --quiet aws-sam-cli >&2

setup: $(VENV)/.installed

demo: setup
	$(PY) -m devtools.demo

lint: setup
	$(VENV)/bin/ruff check .

typecheck: setup
	$(VENV)/bin/mypy

unit: setup
	$(VENV)/bin/pytest

template: setup $(SAM)
	$(VENV)/bin/cfn-lint template.yaml
	$(SAM) validate --lint --region $(AWS_DEFAULT_REGION)

# sam build needs the runtime's interpreter (python3.13) first on PATH.
build: $(SAM)
	PATH="$(dir $(PYTHON_FOR_VENV)):$$PATH" $(SAM) build --parallel

test: lint typecheck unit template build

invoke: setup
	@test -n "$(FN)" -a -n "$(EVENT)" || { echo "usage: make invoke FN=<LogicalId> EVENT=<file>"; exit 2; }
	@$(PY) -m devtools.runner invoke "$(FN)" "$(EVENT)"

serve: setup
	$(PY) -m devtools.runner serve --port $(PORT)

bench: setup
	$(PY) -m benchmarks.run_all

clean:
	rm -rf $(VENV) $(TOOLS) .aws-sam .mypy_cache .ruff_cache
