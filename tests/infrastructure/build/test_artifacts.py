"""What `sam build` writes is what Lambda can run: every handler imports from the artifacts alone.

Lambda puts a function's folder at /var/task and the layer at /opt/python, and nothing else of
ours is on sys.path. Each handler is imported here the same way, by a CPython 3.13 that sees only
the standard library, `.aws-sam/build/<Function>` and `.aws-sam/build/CommonLayer/python` (with
the twin's x86_64 builds of the few compiled extensions; see conftest.py). A module or file
missing from the artifacts fails these tests, not the first request in AWS.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from packaging.markers import Marker, default_environment

from devtools.runner_template import IntrinsicResolver, function_environment, function_specs
from devtools.template import ROOT, load_template

from .conftest import HostLayer, platform_specific_distributions

PROBE = Path(__file__).with_name("lambda_probe.py")
FUNCTIONS = function_specs(load_template())
AARCH64 = 183  # ELF e_machine of ARM 64-bit
CPYTHON_313_MAGIC = b"\xf3\x0d\r\n"  # importlib.util.MAGIC_NUMBER of CPython 3.13


def _probe(request: dict[str, Any], environment: dict[str, str]) -> dict[str, Any]:
    # -I -S: only the standard library and request["path"] can answer an import, as in Lambda.
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(PROBE), json.dumps(request)],
        check=False, capture_output=True, text=True, timeout=300, env=environment, cwd="/",
    )  # fmt: skip
    lines = done.stdout.strip().splitlines()
    assert lines, f"the probe printed nothing; stderr:\n{done.stderr}"
    result: dict[str, Any] = json.loads(lines[-1])
    result["returncode"] = done.returncode
    return result


def _lambda_environment(logical_id: str) -> dict[str, str]:
    template = load_template()
    queues = [name for name, resource in template["Resources"].items() if resource["Type"] == "AWS::SQS::Queue"]
    resolver = IntrinsicResolver(
        template, region="us-east-1", queue_urls={name: f"https://sqs.local/{name}" for name in queues}
    )
    variables = {k: v for k, v in function_environment(template, logical_id, resolver).items() if v != ""}
    return {
        **variables,
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "AWS_LAMBDA_FUNCTION_NAME": logical_id,
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
    }


def _lambda_path(build_dir: Path, host_layer: HostLayer, logical_id: str) -> list[str]:
    return [str(build_dir / logical_id), str(host_layer.binaries), str(build_dir / "CommonLayer" / "python")]


@pytest.mark.parametrize("logical_id", sorted(FUNCTIONS))
def test_given_the_built_artifacts_when_lambda_imports_the_handler_then_it_loads_from_them_alone(
    build_dir: Path, host_layer: HostLayer, logical_id: str
) -> None:
    spec = FUNCTIONS[logical_id]
    request = {"path": _lambda_path(build_dir, host_layer, logical_id), "handler": spec.handler}

    result = _probe(request, _lambda_environment(logical_id))

    assert result["returncode"] == 0, result.get("traceback")
    allowed = (str(build_dir), str(host_layer.binaries), sys.base_prefix)
    strays = {
        name: origin
        for name, origin in result["origins"].items()
        if origin.startswith("/") and not origin.startswith(allowed) and origin != str(PROBE)
    }
    assert not strays, f"imported from outside the artifacts: {strays}"
    handler_module = spec.handler.rsplit(".", 1)[0]
    assert result["imported"][handler_module].startswith(str(build_dir / logical_id))
    assert result["origins"]["lambda_agents"].startswith(str(build_dir / "CommonLayer" / "python"))


def test_given_the_built_layer_when_every_lambda_agents_module_is_imported_then_none_misses_a_dependency(
    build_dir: Path, host_layer: HostLayer
) -> None:
    # Lazily imported modules too (the openai client loads on the first model call only).
    request = {"path": _lambda_path(build_dir, host_layer, "ChatFunction"), "walk": "lambda_agents"}

    result = _probe(request, _lambda_environment("ChatFunction"))

    assert result["returncode"] == 0, result.get("traceback")
    assert "lambda_agents.llm.openai_model" in result["imported"]
    assert result["origins"]["openai"].startswith(str(build_dir / "CommonLayer" / "python"))
    assert result["origins"]["pydantic_core._pydantic_core"].startswith(str(host_layer.binaries))


def test_given_a_dependency_missing_from_the_layer_when_the_modules_are_imported_then_the_probe_fails(
    build_dir: Path, host_layer: HostLayer
) -> None:
    request = {"path": _lambda_path(build_dir, host_layer, "ChatFunction"), "walk": "lambda_agents", "hide": ["openai"]}

    result = _probe(request, _lambda_environment("ChatFunction"))

    assert result["returncode"] == 1
    assert "openai" in result["error"]


def _pins(requirements: str, machine: str) -> set[str]:
    """name==version of each requirement whose marker holds on Lambda's Linux with ``machine``."""
    target = {**default_environment(), "sys_platform": "linux", "platform_system": "Linux", "platform_machine": machine}
    pins = set()
    for pin, marker in re.findall(r"^([A-Za-z0-9_.-]+==[^ \\;]+)(?: ; ([^\\]+))?", requirements, re.M):
        if not marker or Marker(marker.strip()).evaluate(target):
            pins.add(pin.lower().replace("_", "-"))
    return pins


def _distributions(site: Path) -> set[str]:
    found = set()
    for dist_info in site.glob("*.dist-info"):
        name, version = dist_info.name.removesuffix(".dist-info").rsplit("-", 1)
        found.add(f"{name.lower().replace('_', '-')}=={version}")
    return found


def test_the_built_layer_holds_exactly_the_locked_runtime_distributions(build_dir: Path, host_layer: HostLayer) -> None:
    requirements = (ROOT / "layers/common/requirements.txt").read_text(encoding="utf-8")
    built = _distributions(build_dir / "CommonLayer" / "python")

    assert built == _pins(requirements, "aarch64")
    assert "pydantic-core" in {pin.split("==")[0] for pin in built}
    # The twin's extensions are the same releases as the artifacts'.
    assert _distributions(host_layer.root) == _pins(requirements, "x86_64")


def test_every_compiled_extension_in_the_layer_is_for_aarch64_and_cpython_313(build_dir: Path) -> None:
    site = build_dir / "CommonLayer" / "python"
    extensions = sorted(site.rglob("*.so"))
    assert extensions, "the layer holds no compiled extension (pydantic_core has one)"
    for extension in extensions:
        header = extension.read_bytes()[:20]
        assert header[:4] == b"\x7fELF", extension
        assert int.from_bytes(header[18:20], "little") == AARCH64, f"{extension} is not aarch64"
        assert ".cpython-313-aarch64-linux-gnu." in extension.name or ".abi3." in extension.name, extension
    tops = {top for tops in platform_specific_distributions(site).values() for top in tops}
    assert {"pydantic_core", "jiter"} <= tops


def test_the_artifacts_carry_bytecode_of_cpython_313_only_with_lambda_paths(build_dir: Path) -> None:
    compiled = sorted(build_dir.rglob("*.pyc"))
    tags = {path.name.split(".")[-2] for path in compiled}
    assert tags <= {"cpython-313"}, f"bytecode of another Python: {tags - {'cpython-313'}}"
    for path in compiled:
        assert path.read_bytes()[:4] == CPYTHON_313_MAGIC, path
    engine = build_dir / "CommonLayer/python/lambda_agents/llm/__pycache__/__init__.cpython-313.pyc"
    if compiled:  # built with a 3.13 at hand: tracebacks name /opt/python, not the build machine
        assert b"/opt/python/lambda_agents/llm/__init__.py" in engine.read_bytes()


@pytest.mark.parametrize("logical_id", sorted(FUNCTIONS))
def test_a_function_artifact_holds_its_own_folder_and_nothing_installed(build_dir: Path, logical_id: str) -> None:
    """Its requirements.txt (comments only) is copied with the sources and installs nothing:
    every dependency is the layer's, hash-checked from the lock."""
    source = ROOT / FUNCTIONS[logical_id].code_uri.strip("/")
    artifact = build_dir / logical_id

    def files(folder: Path) -> set[str]:
        return {
            str(path.relative_to(folder))
            for path in folder.rglob("*")
            if path.is_file() and "__pycache__" not in path.parts
        }

    assert files(artifact) == files(source)
    assert "requirements.txt" in files(artifact)
    assert not list(artifact.glob("*.dist-info"))
