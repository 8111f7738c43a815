"""The runner's identity headers can never become an identity in AWS: only devtools reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools.template import ROOT

DEPLOYED = [
    ROOT / "template.yaml",
    *sorted((ROOT / "functions").rglob("*.py")),
    *sorted((ROOT / "layers").rglob("*.py")),
]


@pytest.mark.parametrize("path", DEPLOYED, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_deployed_file_mentions_the_local_identity_headers(path: Path) -> None:
    text = path.read_text(encoding="utf-8").lower()
    assert "x-local-user" not in text
    assert "x-local-admin" not in text


def test_the_runner_is_where_those_headers_are_read() -> None:
    assert "x-local-user" in (ROOT / "devtools/runner_api.py").read_text(encoding="utf-8")
