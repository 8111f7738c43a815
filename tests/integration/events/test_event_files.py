"""Every sample event in events/ is a valid event of the function it is for, and that function,
run by the local runner on the real template, answers it as the file's name promises.

The same files are what `sam local invoke <Function> -e <file>` sends, so a broken file here is a
broken first step for a newcomer.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools.local_aws import LocalAws
from devtools.runner import LocalRunner
from devtools.runner import main as runner_main
from devtools.runner_socket import socket_routes
from devtools.runner_template import queue_subscriptions, route_specs, schedule_specs
from devtools.template import ROOT, load_template

pytestmark = pytest.mark.integration

EVENT_FILES = sorted((ROOT / "events").rglob("*.json"))
ROUTES = {(route.method, route.path): route for route in route_specs(load_template())}
DIRECT_INVOCATIONS = {"events/judge/direct.json": "StatusJudgeFunction"}  # a Step Functions task's input
# What a file's name promises: no identity -> 401; invalid input -> 400; otherwise 2xx, or 404
# where the resource it names does not exist in empty tables.
REJECTED_AS_UNAUTHENTICATED = re.compile(r"no_identity|unsigned")
REJECTED_AS_INVALID = re.compile(r"empty|bad_|cycle|gap|duplicate")


def _relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _load(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    assert text.strip(), f"{_relative(path)} is empty"
    event = json.loads(text)
    assert isinstance(event, dict), f"{_relative(path)} is not a JSON object"
    return event


def target_function(path: Path, event: dict[str, Any]) -> str:
    """The function an event file is for, read from the template by the event's shape."""
    template = load_template()
    if "httpMethod" in event:
        route = ROUTES.get((event["httpMethod"], event["resource"]))
        assert route is not None, f"{_relative(path)}: no route {event['httpMethod']} {event['resource']}"
        return route.function_id
    if event.get("detail-type") == "Scheduled Event":
        # The rule's ARN names its function and event (rule/<FunctionLogicalId><EventName>), as SAM names it.
        rules = {
            f"rule/{spec.function_id}{spec.event_name}": spec.function_id
            for specs in schedule_specs(template).values()
            for spec in specs
        }
        (function_id,) = {rules[r.rsplit(":", 1)[-1]] for r in event["resources"] if r.rsplit(":", 1)[-1] in rules}
        return function_id
    if event.get("Records") and all(r.get("eventSource") == "aws:sqs" for r in event["Records"]):
        # The queue's name ends the records' ARN; the template says which function consumes it.
        (queue,) = {str(record["eventSourceARN"]).rsplit(":", 1)[-1] for record in event["Records"]}
        subscriptions = queue_subscriptions(template)
        assert queue in subscriptions, f"{_relative(path)}: no function consumes queue {queue}"
        return subscriptions[queue].function_id
    socket = socket_routes(template)
    if socket is not None and event.get("type") == "REQUEST" and str(event.get("methodArn")).endswith("/$connect"):
        assert socket.authorizer is not None
        return socket.authorizer  # the WebSocket API's $connect authorizer
    route_key = (event.get("requestContext") or {}).get("routeKey")
    if socket is not None and "eventType" in (event.get("requestContext") or {}):
        return socket.functions[route_key]  # a WebSocket API route's event
    assert _relative(path) in DIRECT_INVOCATIONS, f"{_relative(path)}: not an API, schedule or SQS event"
    return DIRECT_INVOCATIONS[_relative(path)]


@pytest.mark.parametrize("path", EVENT_FILES, ids=_relative)
def test_every_event_file_is_a_json_event_of_a_function_in_the_template(path: Path) -> None:
    event = _load(path)

    function_id = target_function(path, event)

    assert function_id in load_template()["Resources"]


@pytest.mark.parametrize("path", [p for p in EVENT_FILES if "httpMethod" in _load(p)], ids=_relative)
def test_every_api_event_matches_its_route_path_parameters_and_identity(path: Path) -> None:
    event = _load(path)
    route = ROUTES[(event["httpMethod"], event["resource"])]
    context = event["requestContext"]

    names = re.findall(r"{(\w+)}", route.path)
    parameters = event.get("pathParameters") or {}
    expected_path = route.path
    for name in names:
        expected_path = expected_path.replace("{" + name + "}", parameters[name])

    assert sorted(parameters) == sorted(names)
    assert event["path"] == expected_path
    assert context["resourcePath"] == route.path
    assert context["httpMethod"] == route.method
    claims = ((context.get("authorizer") or {}).get("claims") or {}).get("sub")
    caller = (context.get("identity") or {}).get("userArn")
    if REJECTED_AS_UNAUTHENTICATED.search(path.name):
        assert not claims and not caller
    else:
        assert bool(claims) == (route.auth == "cognito") and bool(caller) == (route.auth == "iam")
    if event.get("body") is not None and not event.get("isBase64Encoded"):
        json.loads(event["body"])


@pytest.fixture(scope="module")
def runner() -> Iterator[LocalRunner]:
    with LocalAws({"AWS_DEFAULT_REGION": "us-east-1"}) as aws, LocalRunner(environ={}, local_aws=aws) as started:
        yield started


@pytest.mark.parametrize("path", EVENT_FILES, ids=_relative)
def test_every_event_file_is_answered_by_its_function_as_its_name_says(runner: LocalRunner, path: Path) -> None:
    event = _load(path)

    result = runner.invoke(target_function(path, event), event)

    if "httpMethod" not in event:
        return  # a direct, scheduled or queue invocation: returning at all is the answer
    status = result["statusCode"]
    if REJECTED_AS_UNAUTHENTICATED.search(path.name):
        assert status == 401, result
    elif REJECTED_AS_INVALID.search(path.name):
        assert status == 400, result
    else:
        assert status < 300 or status == 404, result


def _documented_event_commands() -> list[list[str]]:
    text = (ROOT / "events/README.md").read_text(encoding="utf-8")
    joined = text.replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        if line.startswith("python -m devtools.runner event "):
            words = shlex.split(line.split(">", 1)[0])
            commands.append(words[3:])
    return commands


@pytest.mark.parametrize("arguments", _documented_event_commands(), ids=lambda a: " ".join(a[:3]))
def test_the_event_commands_of_the_events_readme_print_events_their_functions_accept(
    runner: LocalRunner, arguments: list[str]
) -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert runner_main(arguments) == 0
    event = json.loads(printed.getvalue())

    result = runner.invoke(target_function(ROOT / "events/README.md", event), event)

    assert result["statusCode"] != 400, result  # the documented body is valid for the route
    assert result["statusCode"] < 500, result


API_GATEWAY_HEADERS = {
    "Host",
    "User-Agent",
    "X-Amzn-Trace-Id",
    "X-Forwarded-For",
    "X-Forwarded-Port",
    "X-Forwarded-Proto",
}
ID_TOKEN_CLAIMS = {"sub", "iss", "aud", "token_use", "auth_time", "exp", "iat", "jti", "cognito:username", "email"}
IDENTITY_FIELDS = {"sourceIp", "userAgent", "userArn", "caller", "user", "accountId", "accessKey"}


@pytest.mark.parametrize("path", [p for p in EVENT_FILES if "httpMethod" in _load(p)], ids=_relative)
def test_an_api_event_carries_what_api_gateway_sends(path: Path) -> None:
    """As `sam local generate-event apigateway aws-proxy` and a deployed REST API's proxy event do:
    the headers API Gateway adds (multi-valued too), a whole identity, and for a Cognito route the
    ID token's claims; an IAM caller is an assumed role, as a workflow's or a CI job's is."""
    event = _load(path)
    headers = event["headers"]
    assert set(headers) >= API_GATEWAY_HEADERS
    assert event["multiValueHeaders"] == {name: [value] for name, value in headers.items()}
    context = event["requestContext"]
    assert {"accountId", "apiId", "stage", "requestId", "requestTimeEpoch", "domainName", "path"} <= set(context)
    identity = context["identity"]
    assert set(identity) >= IDENTITY_FIELDS
    claims = (context.get("authorizer") or {}).get("claims")
    if claims:
        assert set(claims) >= ID_TOKEN_CLAIMS and claims["token_use"] == "id"
        assert headers["Authorization"].startswith("eyJ")
    if identity["userArn"]:
        assert ":assumed-role/" in identity["userArn"] and identity["caller"].startswith("AROA")
        assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 ")
