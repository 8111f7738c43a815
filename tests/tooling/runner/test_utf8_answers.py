"""Japanese comes back as UTF-8 text, not ``\\u``-escaped, from the real handler through the
runner's HTTP front door, and the runner's own answers are UTF-8 JSON too."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from devtools.runner import LocalRunner, serving
from devtools.runner_api import STAGE, json_response
from devtools.template import ROOT

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def real_url() -> Iterator[str]:
    with LocalRunner(environ={"AWS_DEFAULT_REGION": "us-east-1"}) as runner, serving(runner) as url:
        yield url


def _sample_body(path: Path) -> bytes:
    return str(json.loads(path.read_text(encoding="utf-8"))["body"]).encode("utf-8")


def test_given_a_japanese_context_when_a_chat_session_is_created_then_the_answer_carries_it_as_utf8(
    real_url: str,
) -> None:
    request = urllib.request.Request(
        f"{real_url}/{STAGE}/ai-agent/sessions",
        data=_sample_body(ROOT / "events/chat/create_session.json"),
        method="POST",
        headers={"Content-Type": "application/json", "X-Local-User": "utf8-user"},
    )

    with urllib.request.urlopen(request, timeout=30) as response:
        raw = response.read()
        content_type = response.headers["Content-Type"]

    assert response.status == 201
    assert content_type == "application/json"
    assert "中途採用".encode() in raw and "東京".encode() in raw
    assert b"\\u" not in raw
    assert json.loads(raw.decode("utf-8"))["context"]["region"] == "東京"


def test_the_runners_own_json_answers_are_utf8_text() -> None:
    answer = json_response(200, {"note": "日本語"})

    assert answer.body == '{"note": "日本語"}'.encode()
    assert ("Content-Type", "application/json") in answer.headers
