"""The local identity headers can never become an identity in AWS.

Only devtools (the local runner) and one layer module read them, and that module does nothing
unless the SAM CLI runs the function (AWS_SAM_LOCAL=true), which Lambda never sets and the
template may not set.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devtools.template import ROOT, load_template

SAM_LOCAL_SWITCH = ROOT / "layers/common/python/lambda_agents/api/sam_local.py"
DEPLOYED = [
    ROOT / "template.yaml",
    *sorted((ROOT / "functions").rglob("*.py")),
    *sorted(path for path in (ROOT / "layers").rglob("*.py") if path != SAM_LOCAL_SWITCH),
]


@pytest.mark.parametrize("path", DEPLOYED, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_deployed_file_but_the_sam_local_switch_mentions_the_local_identity_headers(path: Path) -> None:
    text = path.read_text(encoding="utf-8").lower()
    assert "x-local-user" not in text
    assert "x-local-admin" not in text
    assert "x-local-zoneinfo" not in text


def test_the_runner_is_where_those_headers_are_read() -> None:
    assert "x-local-user" in (ROOT / "devtools/runner_api.py").read_text(encoding="utf-8")


def test_the_template_never_sets_the_sam_local_switch() -> None:
    assert "AWS_SAM_LOCAL" not in json.dumps(load_template())
