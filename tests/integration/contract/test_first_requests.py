"""A newcomer's first requests as tried on a fresh clone: each wrong guess gets an
answer that says what to send instead, through the local runner and the real handlers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from devtools.runner import LocalRunner
from devtools.runner_api import API_GATEWAY_MAX_BODY_BYTES, STAGE, HttpRequest

pytestmark = pytest.mark.integration

USER = ("X-Local-User", "first-requests-user")


def _send(runner: LocalRunner, method: str, path: str, body: bytes, content_type: str | None) -> tuple[int, Any]:
    headers = [USER] + ([("Content-Type", content_type)] if content_type else [])
    answer = runner.handle_http(HttpRequest(method, f"/{STAGE}{path}", "", headers, body))
    return answer.status, json.loads(answer.body)


def _session(runner: LocalRunner) -> str:
    status, created = _send(runner, "POST", "/ai-agent/sessions", b"{}", "application/json")
    assert status == 201, created
    return str(created["sessionId"])


@pytest.mark.parametrize(
    ("content_type", "named"),
    [
        pytest.param("application/x-www-form-urlencoded", "curl -d", id="what_curl_-d_sends"),
        pytest.param(None, "no Content-Type", id="no_content_type"),
        pytest.param("text/plain", "'text/plain'", id="another_media_type"),
    ],
)
def test_given_a_body_not_labelled_json_then_415_says_exactly_which_header_to_send(
    runner: LocalRunner, content_type: str | None, named: str
) -> None:
    status, body = _send(
        runner, "POST", f"/ai-agent/sessions/{_session(runner)}/messages", b'{"message": "hi"}', content_type
    )

    assert status == 415
    assert body["error"]["code"] == "UNSUPPORTED_MEDIA_TYPE"
    assert "`Content-Type: application/json`" in body["error"]["message"]
    assert named in body["error"]["message"]


def test_given_a_guessed_field_name_then_400_names_the_unknown_one_and_the_field_expected(
    runner: LocalRunner,
) -> None:
    path = f"/ai-agent/sessions/{_session(runner)}/messages"

    status, body = _send(runner, "POST", path, json.dumps({"text": "こんにちは"}).encode(), "application/json")

    assert status == 400
    message = body["error"]["message"]
    assert "'message' is required" in message
    assert "'text' is not a field of this body" in message
    assert "send a JSON object with: message (required)" in message
    assert {"field": "body.text", "message": "Extra inputs are not permitted"} in body["error"]["details"]


def test_given_no_body_then_400_lists_the_fields_to_send(runner: LocalRunner) -> None:
    status, body = _send(runner, "PUT", "/nudges/profile", b"", "application/json")

    assert status == 400
    message = body["error"]["message"]
    assert "the request has no body" in message
    assert "timezone (required)" in message and "preferredLanguage" in message


def test_given_a_value_problem_only_then_no_field_list_is_added(runner: LocalRunner) -> None:
    path = f"/ai-agent/sessions/{_session(runner)}/messages"

    status, body = _send(runner, "POST", path, json.dumps({"message": ""}).encode(), "application/json")

    assert status == 400
    assert body["error"]["message"] == "invalid body.message"


def test_a_body_past_api_gateways_10_mb_is_its_413_in_the_error_shape(runner: LocalRunner) -> None:
    status, body = _send(
        runner, "POST", "/ai-agent/sessions", b" " * (API_GATEWAY_MAX_BODY_BYTES + 1), "application/json"
    )

    assert status == 413
    assert body["error"]["code"] == "PAYLOAD_TOO_LARGE"
    assert "API Gateway" in body["error"]["message"]  # its answer, before any function: not the handler's 2 MiB one
