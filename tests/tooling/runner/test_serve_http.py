"""The API over real HTTP on 127.0.0.1: events in, proxy responses out, identity from local headers."""

from __future__ import annotations

import dataclasses
import http.client
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from devtools.runner import LocalRunner, QueuePoller, serving
from tests.support.http_json import exchange

pytestmark = pytest.mark.integration


@pytest.fixture
def base_url(runner: LocalRunner) -> Iterator[str]:
    with serving(runner) as url:
        yield url


def test_given_a_user_header_when_calling_a_cognito_route_then_the_handler_sees_claims_and_path_params(
    base_url: str, calls: list[tuple[str, Any]]
) -> None:
    status, headers, body = exchange(f"{base_url}/items/i%201?view=full&tag=a&tag=b", headers={"X-Local-User": "u-1"})

    assert status == 201
    assert headers["X-Echo"] == "1"
    assert body["resource"] == "/items/{itemId}"
    assert body["pathParameters"] == {"itemId": "i 1"}
    assert body["query"] == {"view": "full", "tag": "b"}
    assert body["claims"]["sub"] == "u-1"
    assert body["userArn"] is None
    assert "X-Local-User" not in body["headers"]  # the runner's identity header never reaches the handler
    assert body["table"] == "ItemsTable"
    assert 0 < body["remaining_ms"] <= 10_000


def test_the_routes_answer_under_the_stage_as_on_the_execute_api_url_and_at_the_root(
    base_url: str, calls: list[tuple[str, Any]]
) -> None:
    user = {"X-Local-User": "u-1"}
    staged, _, staged_body = exchange(f"{base_url}/v1/items/i1", headers=user)
    at_root, _, _ = exchange(f"{base_url}/items/i1", headers=user)
    elsewhere, _, _ = exchange(f"{base_url}/v2/items/i1", headers=user)

    assert (staged, at_root, elsewhere) == (201, 201, 403)  # no route under /v2: API Gateway's 403
    assert staged_body["pathParameters"] == {"itemId": "i1"}
    (_, on_stage), (_, on_root) = calls
    assert (on_stage["path"], on_stage["requestContext"]["path"], on_stage["requestContext"]["stage"]) == (
        "/items/i1",
        "/v1/items/i1",
        "v1",
    )
    assert on_root["path"] == on_root["requestContext"]["path"] == "/items/i1"


@pytest.mark.parametrize(
    ("path", "headers", "status", "message"),
    [
        pytest.param("/items/i1", None, 401, "Unauthorized", id="no_identity_header_on_a_cognito_route"),
        pytest.param(
            "/admin/items",
            {"X-Local-User": "u-1"},
            403,
            "Missing Authentication Token",
            id="a_user_header_on_an_iam_route_where_admins_send_x_local_admin",
        ),
    ],
)
def test_given_no_identity_of_the_routes_kind_then_api_gateways_refusal_without_invoking(
    base_url: str, calls: list[tuple[str, Any]], path: str, headers: dict[str, str] | None, status: int, message: str
) -> None:
    """A template without gateway responses gets AWS's own: Cognito 401, an unsigned IAM call 403."""
    got, _, body = exchange(f"{base_url}{path}", headers=headers)
    local = body.pop("local")  # the runner's own addition beside AWS's words: the header to send

    assert (got, body) == (status, {"message": message})
    assert local["header"] == ("X-Local-User" if status == 401 else "X-Local-Admin")
    assert calls == []


def test_given_an_admin_header_on_an_iam_route_then_the_handler_sees_the_caller_arn(
    base_url: str, calls: list[tuple[str, Any]]
) -> None:
    status, _, body = exchange(f"{base_url}/admin/items", headers={"X-Local-Admin": "ci-bot"})

    assert status == 201
    assert body["userArn"] == "arn:aws:iam::123456789012:user/ci-bot"
    assert body["claims"] is None


def test_a_route_without_authorizer_needs_no_header_and_a_literal_segment_beats_a_parameter(
    base_url: str, calls: list[tuple[str, Any]]
) -> None:
    status, _, body = exchange(f"{base_url}/items/latest")

    assert status == 201
    assert body["resource"] == "/items/latest"
    assert body["claims"] is None


def test_a_post_body_reaches_the_handler_as_text_and_binary_as_base64(
    base_url: str, calls: list[tuple[str, Any]]
) -> None:
    user = {"X-Local-User": "u-1", "Content-Type": "application/json"}
    _, _, text = exchange(f"{base_url}/items", "POST", user, json.dumps({"name": "日本"}).encode())
    _, _, binary = exchange(f"{base_url}/items", "POST", user, b"\xff\x00\xfe")

    assert (json.loads(text["body"]), text["isBase64Encoded"]) == ({"name": "日本"}, False)
    assert (binary["body"], binary["isBase64Encoded"]) == ("/wD+", True)


def test_an_unknown_path_and_a_wrong_method_get_api_gateways_403_missing_authentication_token(
    base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    missing, headers, missing_body = exchange(f"{base_url}/nothing/here")
    wrong, _, wrong_body = exchange(f"{base_url}/items/i1", "DELETE", {"X-Local-User": "u-1"})

    assert (missing, wrong) == (403, 403)
    assert missing_body.pop("local")["fix"].startswith("no route has the path /nothing/here")
    assert wrong_body.pop("local") == {"fix": "/items/i1 takes GET, not DELETE", "methods": ["GET"]}
    assert missing_body == wrong_body == {"message": "Missing Authentication Token"}
    assert headers["x-amzn-ErrorType"] == "MissingAuthenticationTokenException"
    logged = capsys.readouterr().err
    assert "403 GET /nothing/here: no route has the path /nothing/here" in logged
    assert "403 DELETE /items/i1: /items/i1 takes GET, not DELETE" in logged


@pytest.mark.parametrize("method", ["TRACE", "QUERY", "BREW"])
def test_a_method_http_server_does_not_know_is_api_gateways_json_403_not_an_html_501(
    base_url: str, method: str
) -> None:
    status, _, body = exchange(f"{base_url}/items/i1", method, {"X-Local-User": "u-1"})

    assert body.pop("local")["methods"] == ["GET"]
    assert (status, body) == (403, {"message": "Missing Authentication Token"})


def test_a_handler_error_is_502_like_api_gateway(runner: LocalRunner, base_url: str) -> None:
    item_route = runner.routes.routes.index(next(r for r in runner.routes.routes if r.path == "/items/{itemId}"))
    runner.routes.routes[item_route] = dataclasses.replace(
        runner.routes.routes[item_route], function_id="BrokenFunction", auth="none"
    )
    status, _, body = exchange(f"{base_url}/items/i1")
    assert (status, body) == (502, {"message": "Internal server error"})


@pytest.mark.filterwarnings("ignore:No application metrics to publish")
def test_a_handler_built_on_the_shared_powertools_resolver_works_behind_the_runner(
    base_url: str, calls: list[tuple[str, Any]]
) -> None:
    user = {"X-Local-User": "u-9", "Content-Type": "application/json"}

    created = exchange(f"{base_url}/resolved/items", "POST", user, json.dumps({"name": "pen"}).encode())
    read = exchange(f"{base_url}/resolved/items/i-3", headers=user)
    invalid = exchange(f"{base_url}/resolved/items", "POST", user, json.dumps({"name": ""}).encode())

    assert (created[0], created[2]) == (200, {"name": "pen", "owner": "u-9"})
    assert (read[0], read[2]) == (200, {"id": "i-3", "owner": "u-9"})
    assert invalid[0] == 400
    assert invalid[2]["error"]["code"] == "VALIDATION_ERROR"


def test_a_chunked_request_body_is_read_whole(base_url: str, calls: list[tuple[str, Any]]) -> None:
    host, port = base_url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    chunks = iter([b'{"name": ', b'"chunked"}'])
    connection.request("POST", "/items", body=chunks, headers={"X-Local-User": "u-1"}, encode_chunked=True)
    response = connection.getresponse()

    assert response.status == 201
    assert json.loads(json.loads(response.read())["body"]) == {"name": "chunked"}
    connection.close()


def test_while_serving_the_poller_delivers_queued_messages_to_their_consumer(
    runner: LocalRunner, calls: list[tuple[str, Any]]
) -> None:
    poller = QueuePoller(runner, every_s=0.05)
    poller.start()
    try:
        runner.send_message("WorkQueue", "ok-polled")
        deadline = time.monotonic() + 10
        while not calls and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        poller.stop()

    assert calls[0] == ("batch", [("ok-polled", "1")])
