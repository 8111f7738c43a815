"""Where the runner answers in API Gateway's stead, it keeps API Gateway's status, code and message
and adds the local fix to the body (``error.local``), where `curl -s` shows it: the header to send,
the methods a path takes, the nearest routes. A request without the stage is served, as sam local
serves it, and says every time that the deployed API would answer 403 there. An IAM route takes a
SigV4-signed request as the deployed one does, checked for its shape."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from devtools.runner import LocalRunner, serving
from devtools.runner_api import STAGE, HttpRequest, RouteMatch, build_proxy_event
from devtools.runner_local_fixes import STAGE_HEADER, nearest_routes
from devtools.runner_sigv4 import SignatureRefused, signed_caller
from devtools.runner_template import RouteSpec
from devtools.template import load_template
from tests.support.http_json import exchange

pytestmark = pytest.mark.integration
REGION = "us-east-1"
KEYS = Credentials("AKIDLOCALEXAMPLE", "local-secret", "session-token")


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with LocalRunner(environ={"AWS_DEFAULT_REGION": REGION}) as runner, serving(runner) as served:
        yield served


def _declared_message(response_type: str) -> str:
    declared = load_template()["Resources"]["AgentsApi"]["Properties"]["GatewayResponses"][response_type]
    return str(json.loads(declared["ResponseTemplates"]["application/json"])["error"]["message"])


def _signed(method: str, url: str, *, region: str = REGION, service: str = "execute-api") -> dict[str, str]:
    request = AWSRequest(method=method, url=url, headers={})
    SigV4Auth(KEYS, service, region).add_auth(request)
    return dict(request.headers.items())


def test_a_user_route_without_a_user_keeps_the_401_and_names_the_header(url: str) -> None:
    status, headers, body = exchange(f"{url}/{STAGE}/nudges/profile")

    assert status == 401
    assert body["error"]["code"] == "UNAUTHORIZED"
    assert body["error"]["message"] == _declared_message("UNAUTHORIZED")
    assert body["error"]["local"]["header"] == "X-Local-User"
    assert "X-Local-User: <user id>" in body["error"]["local"]["fix"]
    assert "X-Local-User" in headers["X-Local-Runner"]


def test_an_admin_route_without_a_caller_keeps_the_403_and_names_the_header_and_sigv4(url: str) -> None:
    status, _, body = exchange(f"{url}/{STAGE}/api/admin/tiktok/pending")

    assert status == 403
    assert body["error"]["code"] == "MISSING_AUTHENTICATION_TOKEN"
    assert body["error"]["local"]["header"] == "X-Local-Admin"
    assert "X-Local-Admin: <name>" in body["error"]["local"]["fix"] and "--aws-sigv4" in body["error"]["local"]["fix"]


def test_a_method_the_path_does_not_take_names_the_methods_it_takes(url: str) -> None:
    status, _, body = exchange(f"{url}/{STAGE}/nudges/schedule", "DELETE", {"X-Local-User": "u"})

    assert status == 403 and body["error"]["code"] == "MISSING_AUTHENTICATION_TOKEN"
    assert body["error"]["local"]["methods"] == ["GET"]
    assert body["error"]["local"]["fix"] == "/v1/nudges/schedule takes GET, not DELETE"


def test_an_unknown_path_names_the_nearest_routes(url: str) -> None:
    status, _, body = exchange(f"{url}/{STAGE}/nudges/profiles", headers={"X-Local-User": "u"})

    assert status == 403 and body["error"]["code"] == "MISSING_AUTHENTICATION_TOKEN"
    assert body["error"]["message"] == _declared_message("MISSING_AUTHENTICATION_TOKEN")
    assert body["error"]["local"]["nearest"][0] == "GET /v1/nudges/profile"
    assert "PUT /v1/nudges/profile" in body["error"]["local"]["nearest"]


def test_nearest_routes_read_a_parameter_segment_as_whatever_the_request_has_there() -> None:
    routes = [
        RouteSpec("F", "a", "POST", "/interviews/{sessionId}/messages", "cognito"),
        RouteSpec("F", "b", "POST", "/interviews/{sessionId}/consent", "cognito"),
        RouteSpec("F", "c", "GET", "/judge", "iam"),
    ]

    nearest = [r.event_name for r in nearest_routes(routes, "POST", "/interviews/abc-123/message")]

    assert nearest[0] == "a" and "c" not in nearest
    assert nearest_routes(routes, "GET", "/something/else/entirely") == []


def test_a_request_without_the_stage_is_served_and_says_so_every_time(
    url: str, capfd: pytest.CaptureFixture[str]
) -> None:
    for _ in range(2):
        status, headers, _ = exchange(f"{url}/nudges/schedule?date=2026-01-01", headers={"X-Local-User": "u"})
        assert status == 404  # the function answered: no day of nudges for that date
        assert "/v1/nudges/schedule" in headers[STAGE_HEADER] and "403" in headers[STAGE_HEADER]
    staged_status, staged_headers, _ = exchange(
        f"{url}/{STAGE}/nudges/schedule?date=2026-01-01", headers={"X-Local-User": "u"}
    )

    assert staged_status == 404 and STAGE_HEADER not in staged_headers
    logged = capfd.readouterr().err
    assert logged.count("GET /nudges/schedule: served at the root as sam local does") == 2


def test_a_sigv4_signed_request_is_the_admin_caller_of_an_iam_route(url: str) -> None:
    target = f"{url}/{STAGE}/api/admin/tiktok/pending"
    status, _, body = exchange(target, headers=_signed("GET", target))

    assert status == 200 and "tiktokPosts" in body


def test_the_signers_access_key_is_the_caller_in_the_event() -> None:
    route = RouteSpec("JobsFunction", "List", "GET", "/api/admin/jobs", "iam")
    target = "http://127.0.0.1:3000/v1/api/admin/jobs"
    request = HttpRequest("GET", "/v1/api/admin/jobs", "", list(_signed("GET", target).items()), b"")

    event = build_proxy_event(RouteMatch(route, {}), request, region=REGION)

    identity: dict[str, Any] = event["requestContext"]["identity"]
    assert identity["accessKey"] == "AKIDLOCALEXAMPLE"
    assert identity["userArn"].endswith(":user/AKIDLOCALEXAMPLE")


@pytest.mark.parametrize(
    ("headers", "status", "code", "error_type", "said"),
    [
        pytest.param(
            {"Authorization": "AWS4-HMAC-SHA256 Credential=AKIDLOCALEXAMPLE"},
            403,
            "MISSING_AUTHENTICATION_TOKEN",
            "IncompleteSignatureException",
            None,
            id="incomplete",
        ),
        pytest.param(
            {"Authorization": "Bearer eyJ.a.b"},
            403,
            "MISSING_AUTHENTICATION_TOKEN",
            "IncompleteSignatureException",
            None,
            id="a_token_on_an_iam_route",
        ),
    ],
)
def test_a_malformed_signature_is_refused_as_api_gateway_words_it(
    url: str, headers: dict[str, str], status: int, code: str, error_type: str, said: str | None
) -> None:
    got, answer_headers, body = exchange(f"{url}/{STAGE}/api/admin/tiktok/pending", headers=headers)

    assert got == status and body["error"]["code"] == code
    assert answer_headers["x-amzn-ErrorType"] == error_type


def test_a_signature_for_another_service_or_region_is_an_invalid_signature(url: str) -> None:
    target = f"{url}/{STAGE}/api/admin/tiktok/pending"
    other_service = exchange(target, headers=_signed("GET", target, service="s3"))
    other_region = exchange(target, headers=_signed("GET", target, region="eu-west-1"))

    for status, headers, body in (other_service, other_region):
        assert status == 403 and body["error"]["code"] == "INVALID_SIGNATURE"
        assert headers["x-amzn-ErrorType"] == "InvalidSignatureException"
    assert other_service[2]["error"]["message"] == "Credential should be scoped to correct service: 'execute-api'. "
    assert "not 'eu-west-1'" in other_region[2]["error"]["message"]


def test_a_signature_older_than_15_minutes_has_expired() -> None:
    headers = list(_signed("GET", "http://127.0.0.1/v1/judge").items())
    signed_at = datetime.strptime(dict(headers)["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)

    assert signed_caller(headers, REGION, signed_at + timedelta(minutes=14)).session_token is True
    with pytest.raises(SignatureRefused, match="Signature expired") as refused:
        signed_caller(headers, REGION, signed_at + timedelta(minutes=16))
    assert refused.value.response_type == "INVALID_SIGNATURE"


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl 7.75+ (--aws-sigv4)")
def test_curl_aws_sigv4_as_the_deploy_guide_writes_it_is_taken(url: str) -> None:
    done = subprocess.run(
        [
            "curl", "-s", "-w", "\n%{http_code}", "--aws-sigv4", f"aws:amz:{REGION}:execute-api",
            "--user", "AKIDLOCALEXAMPLE:local-secret", "-H", "x-amz-security-token: session-token",
            f"{url}/{STAGE}/api/admin/x/pending",
        ],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    body, _, status = done.stdout.rpartition("\n")

    assert (done.returncode, status) == (0, "200"), done.stdout + done.stderr
    assert "xPosts" in json.loads(body)
