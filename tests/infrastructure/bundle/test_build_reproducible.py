"""One source of versions: uv.lock. What is installed, shipped and built with is pinned by it."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from devtools.template import ROOT
from tests.support.commands import run_command

UV = ROOT / ".tools" / "venv" / "bin" / "uv"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SAM_PROJECT = tomllib.loads((ROOT / "scripts/sam-cli/pyproject.toml").read_text(encoding="utf-8"))


def _uv(*args: str) -> subprocess.CompletedProcess[str]:
    if not UV.exists():
        pytest.fail(f"{UV} is missing: run `make setup` first")
    environment = {**os.environ, "UV_OFFLINE": "1"}  # the lock must answer without an index
    return subprocess.run(
        [str(UV), *args], cwd=ROOT, capture_output=True, text=True, timeout=120, env=environment, check=False
    )


def test_the_lock_is_in_step_with_pyproject() -> None:
    checked = _uv("lock", "--check")
    assert checked.returncode == 0, checked.stderr


def test_the_sam_cli_lock_is_in_step_with_its_project() -> None:
    checked = _uv("lock", "--check", "--project", "scripts/sam-cli")
    assert checked.returncode == 0, checked.stderr


def test_the_layer_requirements_are_the_locks_runtime_dependencies_with_hashes() -> None:
    exported = subprocess.run(
        [str(ROOT / "scripts/layer-requirements.sh")],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False, env={**os.environ, "UV_OFFLINE": "1"},
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    shipped = (ROOT / "layers/common/requirements.txt").read_text(encoding="utf-8")
    assert shipped == exported.stdout, "layers/common/requirements.txt is stale: run `make lock`"
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==", shipped, re.M)
    assert {"aws-lambda-powertools", "boto3", "openai", "pydantic", "pydantic-core", "tzdata"} <= set(pins)
    assert not {"pytest", "moto", "mypy", "aws-sam-cli"} & set(pins)  # runtime only
    requirements = re.split(r"\n(?=[A-Za-z0-9])", shipped.split("\n", 2)[2].strip())
    assert all("--hash=sha256:" in requirement for requirement in requirements)


def test_uv_and_aws_sam_cli_are_pinned_to_exact_versions() -> None:
    assert re.fullmatch(r"==\d+\.\d+\.\d+", PYPROJECT["tool"]["uv"]["required-version"])
    assert SAM_PROJECT["tool"]["uv"]["required-version"] == PYPROJECT["tool"]["uv"]["required-version"]
    assert [re.sub(r"==\d+\.\d+\.\d+$", "", dep) for dep in SAM_PROJECT["project"]["dependencies"]] == ["aws-sam-cli"]
    assert "aws-sam-cli" not in (ROOT / "uv.lock").read_text(encoding="utf-8")  # never in .venv


def test_the_venv_and_the_layer_use_the_runtimes_python() -> None:
    assert (ROOT / ".python-version").read_text(encoding="utf-8").strip() == "3.13"
    assert PYPROJECT["project"]["requires-python"] == ">=3.13,<3.14"
    layer_makefile = (ROOT / "layers/common/Makefile").read_text(encoding="utf-8")
    assert "LAYER_PLATFORM ?= aarch64-manylinux_2_28" in layer_makefile
    assert "LAYER_PYTHON_VERSION := 3.13" in layer_makefile
    assert "--require-hashes" in layer_makefile


@pytest.mark.parametrize("platform", ["aarch64-manylinux_2_28", "x86_64-manylinux_2_28"])
def test_a_plain_sam_build_finds_the_repositorys_uv_and_python_without_them_on_path(
    tmp_path: Path, platform: str
) -> None:
    """`sam build` runs the layer's Makefile in a copy of layers/common but names the source
    Makefile; without `make build`'s LAMBDA_AGENTS_* and with no uv on PATH it once failed with
    "uv not found". LAYER_PLATFORM picks the wheels (samconfig.toml's x86_64 environment)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("LAMBDA_AGENTS_")}
    environment |= {"PATH": "/usr/bin:/bin", "ARTIFACTS_DIR": str(tmp_path / "artifacts"), "LAYER_PLATFORM": platform}
    makefile = ROOT / "layers" / "common" / "Makefile"

    planned = run_command(
        ["make", "--dry-run", "--makefile", str(makefile), "build-CommonLayer"],
        cwd=tmp_path,
        env=environment,
        timeout=60,
    )

    assert planned.returncode == 0, planned.stderr
    assert f'"{UV}" pip install' in planned.stdout
    assert f"--python-platform {platform}" in planned.stdout
    assert f'"{ROOT / ".venv" / "bin" / "python"}" -m compileall' in planned.stdout
