"""The artifacts `sam build` writes, and an x86_64 twin of their layer for this host.

The built layer holds aarch64 wheels (the runtime's); their compiled extensions cannot load on
an x86_64 machine. The twin is the same layer built by the same Makefile from the same locked,
hash-checked requirements for x86_64: only the platform-specific distributions are taken from
it, everything else (the handlers, lambda_agents, every pure-Python dependency) is imported from
the artifacts themselves.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from devtools.template import ROOT

BUILD_DIR = ROOT / ".aws-sam" / "build"
SOURCES = [ROOT / "template.yaml", ROOT / "functions", ROOT / "layers" / "common"]
UV = ROOT / ".tools" / "venv" / "bin" / "uv"


def _newest_source_mtime() -> float:
    newest = 0.0
    for source in SOURCES:
        paths = [source] if source.is_file() else [p for p in source.rglob("*") if "__pycache__" not in p.parts]
        newest = max([newest, *(p.stat().st_mtime for p in paths if p.is_file())])
    return newest


@pytest.fixture(scope="session")
def build_dir() -> Path:
    """.aws-sam/build as `make build` leaves it; rebuilt first when older than the sources."""
    built = BUILD_DIR / "template.yaml"
    if not built.exists() or built.stat().st_mtime < _newest_source_mtime():
        subprocess.run(["make", "-s", "build"], cwd=ROOT, check=True, capture_output=True, timeout=900)
    return BUILD_DIR


@dataclass(frozen=True)
class HostLayer:
    root: Path  # the twin layer's python/ folder
    binaries: Path  # only its platform-specific distributions' top-level packages


def platform_specific_distributions(site: Path) -> dict[str, list[str]]:
    """dist-info folder -> top-level names, for the wheels that are not pure Python."""
    found = {}
    for dist_info in sorted(site.glob("*.dist-info")):
        wheel = (dist_info / "WHEEL").read_text(encoding="utf-8")
        if "Root-Is-Purelib: true" in wheel:
            continue
        tops = set()
        for line in (dist_info / "RECORD").read_text(encoding="utf-8").splitlines():
            first = line.split(",", 1)[0].split("/", 1)[0]
            if first and not first.endswith(".dist-info") and first not in {"..", "bin", "__pycache__"}:
                tops.add(first)
        found[dist_info.name] = sorted(tops)
    return found


@pytest.fixture(scope="session")
def host_layer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostLayer]:
    artifacts = tmp_path_factory.mktemp("host-layer")
    subprocess.run(
        [
            "make", "-s", "-C", str(ROOT / "layers" / "common"), "build-CommonLayer",
            f"ARTIFACTS_DIR={artifacts}", "LAYER_PLATFORM=x86_64-manylinux_2_28", f"UV={UV}", "PYTHON313=",
        ],
        check=True, capture_output=True, timeout=900, env={**os.environ},
    )  # fmt: skip
    site = artifacts / "python"
    binaries = tmp_path_factory.mktemp("host-binaries")
    for tops in platform_specific_distributions(site).values():
        for top in tops:
            source = site / top
            if source.is_dir():
                shutil.copytree(source, binaries / top)
            else:
                shutil.copy2(source, binaries / top)
    yield HostLayer(root=site, binaries=binaries)
