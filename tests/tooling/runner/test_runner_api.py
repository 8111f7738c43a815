"""Route matching, the REST (v1) proxy event the runner builds, identity headers, response mapping."""

from __future__ import annotations

import base64
from collections.abc import Sequence

import pytest
from lambda_agents.api.called_path import called_base_path

from devtools.runner_api import (
    ApiEntrances,
    HttpRequest,
    MalformedProxyResponse,
    MethodNotAllowed,
    RouteMatch,
    RouteTable,
    Unauthenticated,
    build_proxy_event,
    proxy_response_to_http,
)
from devtools.runner_template import RouteSpec, route_specs
from devtools.template import load_template

TABLE = RouteTable(route_specs(load_template()))


def _match(method: str, path: str) -> RouteMatch:
    matched = TABLE.match(method, path)
    assert isinstance(matched, RouteMatch), matched
    return matched


def _request(
    method: str = "GET",
    path: str = "/",
    query: str = "",
    headers: Sequence[tuple[str, str]] = (),
    body: bytes = b"",
) -> HttpRequest:
    return HttpRequest(method=method, path=path, query=query, headers=list(headers), body=body)


def test_a_path_with_a_parameter_matches_its_resource_and_decodes_the_value() -> None:
    matched = _match("POST", "/ai-agent/sessions/s%2F1/messages")

    assert matched.route.path == "/ai-agent/sessions/{sessionId}/messages"
    assert matched.path_parameters == {"sessionId": "s/1"}


def test_a_trailing_slash_matches_the_same_resource() -> None:
    assert _match("GET", "/interviews/abc/").route.path == "/interviews/{sessionId}"


def test_two_routes_of_one_resource_are_told_apart_by_method() -> None:
    assert _match("GET", "/process-templates").route.event_name == "SearchTemplates"
    assert _match("POST", "/process-templates").route.event_name == "CreateTemplate"


def test_an_unknown_path_matches_nothing_and_a_wrong_method_lists_the_allowed_ones() -> None:
    assert TABLE.match("GET", "/nope") is None
    assert TABLE.match("DELETE", "/process-templates") == MethodNotAllowed(("GET", "POST"))


def test_a_literal_segment_beats_a_parameter_which_beats_a_greedy_proxy() -> None:
    table = RouteTable(
        [
            RouteSpec("Proxy", "p", "ANY", "/files/{proxy+}", "none"),
            RouteSpec("Param", "q", "GET", "/files/{name}", "none"),
            RouteSpec("Literal", "l", "GET", "/files/latest", "none"),
        ]
    )

    def target(path: str) -> tuple[str, dict[str, str]]:
        matched = table.match("GET", path)
        assert isinstance(matched, RouteMatch)
        return matched.route.function_id, matched.path_parameters

    assert target("/files/latest") == ("Literal", {})
    assert target("/files/a.txt") == ("Param", {"name": "a.txt"})
    assert target("/files/a/b/c") == ("Proxy", {"proxy": "a/b/c"})


def test_a_cognito_route_event_carries_the_claims_from_x_local_user_and_not_the_header() -> None:
    request = _request(
        "POST",
        "/ai-agent/sessions/s1/messages",
        "a=1&a=2&b=",
        [("Content-Type", "application/json"), ("X-Local-User", "user-7"), ("X-Trace", "t1"), ("X-Trace", "t2")],
        b'{"text": "hi"}',
    )

    event = build_proxy_event(_match("POST", request.path), request, now=1_700_000_000.0)

    assert event["resource"] == "/ai-agent/sessions/{sessionId}/messages"
    assert event["path"] == "/ai-agent/sessions/s1/messages"
    assert event["httpMethod"] == "POST"
    assert event["pathParameters"] == {"sessionId": "s1"}
    assert event["queryStringParameters"] == {"a": "2", "b": ""}
    assert event["multiValueQueryStringParameters"] == {"a": ["1", "2"], "b": [""]}
    assert event["headers"] == {"Content-Type": "application/json", "X-Trace": "t2"}
    assert event["multiValueHeaders"]["X-Trace"] == ["t1", "t2"]
    assert (event["body"], event["isBase64Encoded"]) == ('{"text": "hi"}', False)
    context = event["requestContext"]
    assert context["authorizer"]["claims"]["sub"] == "user-7"
    assert context["identity"]["userArn"] is None
    assert (context["stage"], context["resourcePath"], context["httpMethod"]) == (
        "v1",
        "/ai-agent/sessions/{sessionId}/messages",
        "POST",
    )
    assert context["requestTimeEpoch"] == 1_700_000_000_000
    assert context["requestId"]


def test_an_iam_route_event_carries_the_caller_arn_from_x_local_admin() -> None:
    request = _request("GET", "/api/admin/x/pending", headers=[("x-local-admin", "release-bot")])

    event = build_proxy_event(_match("GET", request.path), request)

    assert event["requestContext"]["identity"]["userArn"] == "arn:aws:iam::123456789012:user/release-bot"
    assert "authorizer" not in event["requestContext"]
    assert event["headers"] is None


@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [
        ("POST", "/ai-agent/sessions", []),
        ("POST", "/ai-agent/sessions", [("X-Local-Admin", "ops")]),  # the admin header is not a user
        ("POST", "/judge", [("X-Local-User", "u1")]),  # nor is a user an IAM caller
        ("POST", "/judge", [("X-Local-Admin", "")]),
        ("POST", "/ai-agent/sessions", [("X-Local-User", "has space")]),
    ],
)
def test_a_route_with_an_authorizer_and_no_matching_identity_header_is_unauthenticated(
    method: str, path: str, headers: list[tuple[str, str]]
) -> None:
    with pytest.raises(Unauthenticated):
        build_proxy_event(_match(method, path), _request(method, path, headers=headers))


def test_a_body_that_is_not_utf8_is_passed_base64_encoded() -> None:
    request = _request("POST", "/judge", headers=[("X-Local-Admin", "a")], body=b"\xff\xfe")
    event = build_proxy_event(_match("POST", "/judge"), request)
    assert (event["body"], event["isBase64Encoded"]) == (base64.b64encode(b"\xff\xfe").decode(), True)


def test_a_proxy_response_maps_status_headers_and_body() -> None:
    response = proxy_response_to_http(
        {
            "statusCode": 201,
            "headers": {"Content-Type": "application/json"},
            "multiValueHeaders": {"Set-Cookie": ["a=1", "b=2"]},
            "body": '{"ok": true}',
        }
    )
    assert response.status == 201
    assert ("Set-Cookie", "a=1") in response.headers and ("Set-Cookie", "b=2") in response.headers
    assert response.body == b'{"ok": true}'


def test_a_base64_proxy_response_is_decoded() -> None:
    response = proxy_response_to_http({"statusCode": 200, "body": "/wD+", "isBase64Encoded": True})
    assert response.body == b"\xff\x00\xfe"


@pytest.mark.parametrize(
    "result",
    [
        None,
        "text",
        {"body": "x"},
        {"statusCode": 99},
        {"statusCode": 200, "body": {"a": 1}},
        {"statusCode": 200, "body": "%%", "isBase64Encoded": True},
    ],
)
def test_a_result_that_is_not_a_proxy_response_is_malformed(result: object) -> None:
    with pytest.raises(MalformedProxyResponse):
        proxy_response_to_http(result)


ENTRANCES = ApiEntrances("v1", "/agents")
POSTED = "/ai-agent/sessions/s1/messages"


@pytest.mark.parametrize(
    ("called", "kind", "event_path"),
    [
        pytest.param(f"/v1{POSTED}", "stage", POSTED, id="execute_api_url_drops_the_stage_from_path"),
        pytest.param(f"/agents{POSTED}", "base path", f"/agents{POSTED}", id="custom_domain_keeps_its_base_path"),
        pytest.param(POSTED, "root", POSTED, id="root_as_a_mapping_without_base_path"),
    ],
)
def test_each_entrance_fills_path_and_request_context_as_api_gateway_does(
    called: str, kind: str, event_path: str
) -> None:
    """The execute-api URL, a custom domain's base path, and a root mapping: ``requestContext.path``
    is the path as called; ``path`` drops the stage only; the resource is the route's either way."""
    entrance = ENTRANCES.of(called)
    request = HttpRequest(
        "POST", called, "", [("X-Local-User", "u"), ("Host", "127.0.0.1:3000")], b"{}", host="127.0.0.1:3000"
    )

    event = build_proxy_event(_match("POST", entrance.route_path(called)), request, entrance)

    assert entrance.kind == kind
    assert (event["path"], event["resource"]) == (event_path, "/ai-agent/sessions/{sessionId}/messages")
    context = event["requestContext"]
    assert (context["path"], context["stage"], context["resourcePath"]) == (
        called,
        "v1",
        "/ai-agent/sessions/{sessionId}/messages",
    )
    assert (context["domainName"], context["domainPrefix"]) == ("127.0.0.1", "127")  # no port, as in AWS
    # What the functions read from it: the stage or base path the client called through.
    assert called_base_path(event, ["/agents"]) == called.removesuffix(POSTED)


def test_a_stage_or_base_path_is_one_whole_segment_and_the_base_path_wins_over_the_stage() -> None:
    assert ENTRANCES.of("/v1").kind == "stage" and ENTRANCES.of("/v1").route_path("/v1") == "/"
    assert ENTRANCES.of("/v1x/ai-agent").kind == "root"
    assert ENTRANCES.of("/agentsx/ai-agent").kind == "root"
    assert ApiEntrances("v1", "/v1").of("/v1/judge").kind == "base path"
    assert ApiEntrances("v1").base_path is None


def test_the_servers_a_client_of_the_runner_calls_are_the_stage_then_the_base_path() -> None:
    assert [server["url"] for server in ENTRANCES.servers()] == ["/v1", "/agents"]
    assert [server["url"] for server in ApiEntrances("Prod").servers()] == ["/Prod"]
