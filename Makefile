# The README's commands. Everything installs into the repository (.venv, .tools): nothing global.
# Every version comes from uv.lock (uv itself is pinned in pyproject.toml); `make lock` changes it.
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV := .venv
PY := $(VENV)/bin/python
UV := .tools/venv/bin/uv
SAM := .tools/bin/sam
export SAM_CLI_TELEMETRY := 0
# Compiled modules are cached in __pycache__ (git and sam build leave them out): a shell that turns
# the cache off makes every test process compile every module it imports again, each run.
unexport PYTHONDONTWRITEBYTECODE
export AWS_DEFAULT_REGION ?= us-east-1
# What layers/common/Makefile builds with when sam build runs it in a copy of that folder.
export LAMBDA_AGENTS_UV := $(CURDIR)/$(UV)
export LAMBDA_AGENTS_PYTHON := $(CURDIR)/$(PY)
FN ?=
EVENT ?=
# FIGURES=record: a suite's run writes its counts and times into tests/support/suite_figures.json
# (tests/support/suite_figures.py); `make figures` then writes them into the docs.
FIGURES ?= print
PORT ?= 3000
LOCAL_ENDPOINT_PORT ?= 8000

.PHONY: help setup demo test lint typecheck unit integration infrastructure tooling suites template build browser \
	metrics-catalog \
	invoke serve bench bench-quick lock figures \
	test-live test-sam-local sam-local-env sam-local-endpoint clean

help:
	@echo "make demo    run the product locally on embedded defaults (no AWS, no key, no Docker)"
	@echo "make test    ruff, import-linter, mypy, cfn-lint, sam validate --lint, sam build, pytest (artifacts and Swagger UI included)"
	@echo "make unit    the pure unit suite alone; make integration / infrastructure / tooling: the others"
	@echo "make unit FIGURES=record   record a suite's counts and times; make figures writes them into the docs"
	@echo "make invoke FN=<LogicalId> EVENT=<file>   invoke one function like 'sam local invoke'"
	@echo "make serve [PORT=3000]   the template's API on 127.0.0.1, Swagger UI at /swagger"
	@echo "make bench   benchmarks with their baselines and peers (~104 min; benchmarks/README.md)"
	@echo "make bench-quick   the peer table and a real-speed row, fewer samples (under 5 min): benchmarks/results/quick.md"
	@echo "make test-live   tests against OpenAI (OPENAI_API_KEY) and a deployed stack (AWS_SAM_STACK_NAME)"
	@echo "make sam-local-endpoint   DynamoDB + SQS on 127.0.0.1:$(LOCAL_ENDPOINT_PORT) for sam local (sam-local.env.json)"
	@echo "make test-sam-local   every function through sam local in Docker (root: installs and starts Docker)"
	@echo "make lock    re-resolve uv.lock and export the layer's requirements from it"

# Set-up output goes to stderr so that `make invoke` keeps stdout for the JSON result.
$(VENV)/.installed: pyproject.toml uv.lock .python-version scripts/setup.sh scripts/find-python.sh
	@scripts/setup.sh venv
	@touch $@

# aws-sam-cli pins boto3 and pydantic: it has its own lock and environment, never .venv.
.tools/sam/.installed: scripts/sam-cli/pyproject.toml scripts/sam-cli/uv.lock scripts/setup.sh
	@scripts/setup.sh sam
	@touch $@

# .venv and the SAM CLI in .tools: every command the docs show after `make setup` (or `make demo`)
# finds what it calls, `.tools/bin/sam` included.
setup: $(VENV)/.installed .tools/sam/.installed

# Debian's Chromium for the browser tests: Swagger UI, the live answers page (installed as root when missing).
browser:
	@scripts/ensure-chromium.sh

demo: setup
	$(PY) -m devtools.demo

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache

typecheck: setup
	$(VENV)/bin/mypy

# The tests by cost (docs/local.md#the-tests). unit: pure, no socket, subprocess or moto (tests/unit/conftest.py
# refuses them); integration: handlers through moto and the fake OpenAI server; infrastructure: the
# template, sam build's artifacts, sam local, the browser; tooling: the local runner, devtools, benchmarks.
unit: setup
	$(VENV)/bin/pytest tests/unit --suite-figures=$(FIGURES)

integration: setup
	$(VENV)/bin/pytest tests/integration --suite-figures=$(FIGURES)

# The artifact tests import the handlers from .aws-sam/build.
infrastructure: setup browser build
	$(VENV)/bin/pytest tests/infrastructure --suite-figures=$(FIGURES)

tooling: setup
	$(VENV)/bin/pytest tests/tooling --suite-figures=$(FIGURES)

# Every suite in one pytest run (after `build`), as CI runs it.
suites: setup browser
	$(VENV)/bin/pytest --suite-figures=$(FIGURES)

# The docs' marked test counts and times, rewritten from tests/support/suite_figures.json.
figures: setup
	$(PY) -m devtools.doc_figures write

template: setup .tools/sam/.installed
	$(VENV)/bin/cfn-lint template.yaml
	$(SAM) validate --lint --region $(AWS_DEFAULT_REGION)

# The layer is built by layers/common/Makefile with uv (aarch64, CPython 3.13); the functions by
# sam's python3.13 workflow, which needs that interpreter first on PATH.
build: setup .tools/sam/.installed
	PATH="$$(dirname $$(readlink -f $(PY))):$$PATH" $(SAM) build --parallel

test: lint typecheck template build suites

# tests/support/emitted_metrics.json: every metric the handlers emit in the suites that run them,
# which the template's alarms and dashboard are held to (a one-process run of both suites).
metrics-catalog: setup
	$(VENV)/bin/pytest tests/integration tests/tooling --emf-catalog=write

test-live: setup
	LAMBDA_AGENTS_LIVE=1 $(VENV)/bin/pytest tests/live -rs

lock: setup
	$(UV) lock
	$(UV) lock --project scripts/sam-cli
	scripts/layer-requirements.sh > layers/common/requirements.txt

invoke: setup
	@test -n "$(FN)" -a -n "$(EVENT)" || { echo "usage: make invoke FN=<LogicalId> EVENT=<file>"; exit 2; }
	@$(PY) -m devtools.runner invoke "$(FN)" "$(EVENT)"

serve: setup
	$(PY) -m devtools.runner serve --port $(PORT)

# Docker from Debian's packages, dockerd for the run, the Lambda base image built here, sam build for
# x86_64, then tests/docker (docs/local.md#sam-local-docker). Not part of `make test`.
test-sam-local: setup .tools/sam/.installed
	scripts/test-sam-local.sh

sam-local-env: setup
	$(PY) -m devtools.sam_local env-file > sam-local.env.json

sam-local-endpoint: setup
	$(PY) -m devtools.sam_local endpoint --port $(LOCAL_ENDPOINT_PORT)

# benchmarks/README.md: what each benchmark measures, against what, and how long it takes.
bench: setup
	$(PY) -m benchmarks.run_all

bench-quick: setup
	$(PY) -m benchmarks.run_all --quick

clean:
	rm -rf $(VENV) .tools .aws-sam .mypy_cache .ruff_cache
