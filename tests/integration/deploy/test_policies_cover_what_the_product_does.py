"""Every AWS call a function makes is allowed by its role, and its role allows nothing the product
never does: the real handlers run a scenario through the local runner over every route, queue and
schedule of the template (offline model, embedded moto); each call is recorded with the function
that made it, turned into the IAM action and resource it needs, and compared with the statements
of the SAM-transformed template.

A transaction's items are authorised one by one (Put -> PutItem on its table), a Query on an index
needs the index, SendMessageBatch is authorised as SendMessage, and a write limited to some
partition keys (``dynamodb:LeadingKeys``) must name only those. A call the scenario makes fail on
purpose (EventBridge unreachable) is recorded all the same: in AWS it would have been sent. The
model functions then start once more as deployed, reading the OpenAI key from Parameter Store.
Grants the scenario cannot reach are listed with the reason."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, date, datetime, timedelta
from fnmatch import fnmatchcase
from typing import Any
from zoneinfo import ZoneInfo

import boto3
import botocore.client
import pytest
from botocore.exceptions import EndpointConnectionError
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from devtools import runner_lambda
from devtools.fake_openai import FakeOpenAIServer
from devtools.runner import LocalRunner, serving
from devtools.runner_api import STAGE, HttpRequest, RouteMatch
from devtools.runner_event_sources import scheduled_event, sqs_event
from devtools.template import load_template, resources_of_type
from tests.live.routes import sample_body
from tests.support.sam_template import granted, statements_of, transformed

pytestmark = pytest.mark.integration

ADMIN = "release-bot"
USER = "user-0001"  # lives in Tokyo (events/nudges/put_profile.json)
TOKYO = ZoneInfo("Asia/Tokyo")
GENERATION_HOUR = 5  # NUDGE_GENERATION_HOUR's default: the scheduler queues a zone at 05:xx local time
UNKNOWN_SESSION = "0123456789abcdef0123456789abcdef"  # a well-formed chat or interview id nobody has

# (function, action, resource) granted but not reached offline, and why.
NOT_REACHED = {
    # Powertools idempotency reads a record with GetItem only when a refused write does not return it
    # (DynamoDB returns it with the refusal).
    ("NudgeGeneratorFunction", "dynamodb:GetItem", "table:NudgeIdempotencyTable"),
    ("ChatFunction", "dynamodb:GetItem", "table:ChatIdempotencyTable"),
    ("InterviewFunction", "dynamodb:GetItem", "table:InterviewIdempotencyTable"),
    ("SocketMessageFunction", "dynamodb:GetItem", "table:ChatIdempotencyTable"),
    ("SocketMessageFunction", "dynamodb:GetItem", "table:InterviewIdempotencyTable"),
    # Lambda itself sends a failed asynchronous run to the scheduler's OnFailure destination.
    ("NudgeSchedulerFunction", "sqs:SendMessage", "queue:NudgeSchedulerFailureQueue"),
    # A turn the worker runs announces the application only when it finishes the interview; the
    # scenario's handed-over turns (a correction, a greeting) do not. The call is the same as
    # InterviewFunction's (ApplicationEventDelivery after the commit), which this scenario uses.
    ("InterviewTurnFunction", "events:PutEvents", "bus:ApplicationEventBusName"),
    # The key is read at a function's first model call (llm/api_key.py); the deployed generator's
    # runs here make none (a user whose plan cannot fit is deferred before any call, an unknown
    # user is skipped). Its model calls, with the key, are proven in tests/integration/nudges.
    ("NudgeGeneratorFunction", "ssm:GetParameter", "parameter:OpenAIApiKeyParameterName"),
}


class CallRecorder:
    """AWS calls made while a function runs in the runner, as (function, action, resource)."""

    def __init__(self) -> None:
        self.function: str | None = None
        self.functions: set[str] = set()
        self.calls: set[tuple[str, str, str]] = set()
        self.partition_keys: dict[tuple[str, str, str], set[str]] = {}  # what dynamodb:LeadingKeys sees
        self.unreachable: set[str] = set()

    def record(self, service: str, operation: str, params: dict[str, Any]) -> None:
        if self.function is None:
            return  # the scenario's own set-up and checks
        for action, resource, keys in needed_permissions(service, operation, params):
            call = (self.function, action, resource)
            self.calls.add(call)
            self.partition_keys.setdefault(call, set()).update(keys)

    @contextmanager
    def service_unreachable(self, service: str) -> Iterator[None]:
        """Calls to ``service`` fail as if its endpoint could not be reached (after being recorded)."""
        self.unreachable.add(service)
        try:
            yield
        finally:
            self.unreachable.discard(service)


Permission = tuple[str, str, tuple[str, ...]]  # action, resource, the partition keys it names
TRANSACTION_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


def needed_permissions(service: str, operation: str, params: dict[str, Any]) -> list[Permission]:
    if service == "dynamodb":
        return needed_dynamodb_permissions(operation, params)
    if service == "sqs":
        action = "SendMessage" if operation == "SendMessageBatch" else operation
        return [(f"sqs:{action}", f"queue:{params['QueueUrl'].rsplit('/', 1)[-1]}", ())]
    if service == "ssm" and operation == "GetParameter":
        # A name with slashes starts with one; the ARN carries it without: parameter/a/b for /a/b.
        return [("ssm:GetParameter", f"parameter:{parameter_defaulting_to(params['Name'].removeprefix('/'))}", ())]
    if service == "apigatewaymanagementapi":  # the WebSocket API's @connections: POST to a connection
        return [("execute-api:ManageConnections", "connections:SocketApi", ())]
    if service == "events" and operation == "PutEvents":
        buses = {entry.get("EventBusName", "default") for entry in params["Entries"]}
        return [("events:PutEvents", f"bus:{parameter_defaulting_to(bus)}", ()) for bus in buses]
    return [(f"{service}:{operation}", f"{service}:{json.dumps(params, default=str)[:80]}", ())]


def needed_dynamodb_permissions(operation: str, params: dict[str, Any]) -> list[Permission]:
    if operation == "TransactWriteItems":
        return [
            (
                f"dynamodb:{TRANSACTION_ACTIONS[kind]}",
                f"table:{body['TableName']}",
                item_keys(body["TableName"], [body]),
            )
            for item in params["TransactItems"]
            for kind, body in item.items()
        ]
    if operation == "TransactGetItems":
        gets = [item["Get"] for item in params["TransactItems"]]
        return [("dynamodb:GetItem", f"table:{get['TableName']}", item_keys(get["TableName"], [get])) for get in gets]
    if operation == "BatchWriteItem":
        writes = params["RequestItems"].items()
        return [
            (
                "dynamodb:BatchWriteItem",
                f"table:{name}",
                item_keys(name, [body for r in requests for body in r.values()]),
            )
            for name, requests in writes
        ]
    if operation == "BatchGetItem":
        return [
            ("dynamodb:BatchGetItem", f"table:{name}", item_keys(name, [{"Key": key} for key in request["Keys"]]))
            for name, request in params["RequestItems"].items()
        ]
    name = params["TableName"]
    if params.get("IndexName"):
        return [(f"dynamodb:{operation}", f"index:{name}/{params['IndexName']}", ())]
    if operation == "Query":
        return [("dynamodb:Query", f"table:{name}", (queried_partition(params, hash_key(name)),))]
    return [(f"dynamodb:{operation}", f"table:{name}", item_keys(name, [params]))]


def hash_key(table_name: str) -> str:
    """The table's partition key attribute (the runner names each table after its logical id)."""
    schema = load_template()["Resources"][table_name]["Properties"]["KeySchema"]
    return str(next(part["AttributeName"] for part in schema if part["KeyType"] == "HASH"))


def plain(value: Any) -> str:
    """A key value as the resource layer passes it ("x") or the client does ({"S": "x"})."""
    return str(value["S"]) if isinstance(value, dict) else str(value)


def item_keys(table_name: str, bodies: list[dict[str, Any]]) -> tuple[str, ...]:
    attribute = hash_key(table_name)
    return tuple(plain((body.get("Key") or body["Item"])[attribute]) for body in bodies)


def queried_partition(params: dict[str, Any], attribute: str) -> str:
    condition = params["KeyConditionExpression"]
    if isinstance(condition, str):
        names = params.get("ExpressionAttributeNames", {})
        for name, placeholder in re.findall(r"(#?\w+)\s*=\s*(:\w+)", condition):
            if names.get(name, name) == attribute:
                return plain(params["ExpressionAttributeValues"][placeholder])
        raise AssertionError(f"no {attribute} = :value in {condition!r}")
    expression = condition.get_expression()  # a boto3 condition: Key(...).eq(...) & ...
    if expression["operator"] == "AND":
        for part in expression["values"]:
            with suppress(AssertionError):
                return queried_partition({"KeyConditionExpression": part}, attribute)
    elif expression["operator"] == "=" and expression["values"][0].name == attribute:
        return plain(expression["values"][1])
    raise AssertionError(f"no {attribute} = value in {expression}")


def parameter_defaulting_to(value: str) -> str:
    """The template parameter a runtime name comes from (the runner deploys every default)."""
    (name,) = [name for name, body in load_template()["Parameters"].items() if body.get("Default") == value]
    return name


def resource_name(target: str) -> str:
    """The transformed template's resource notation -> the recorder's."""
    value = json.loads(target)
    if "Fn::GetAtt" in value:
        name = value["Fn::GetAtt"][0]
        kind = transformed()["Resources"][name]["Type"]
        return f"{'queue' if kind == 'AWS::SQS::Queue' else 'table'}:{name}"
    text = value["Fn::Sub"]
    if "/index/" in text:
        table, index = text.split("/index/")
        return f"index:{table.strip('${}').removesuffix('.Arn')}/{index}"
    if "/@connections/" in text:
        return "connections:SocketApi"
    kind = "bus" if ":event-bus/" in text else "parameter"
    return f"{kind}:{text.rsplit('${', 1)[-1].rstrip('}')}"


def allowed() -> set[tuple[str, str, str]]:
    template = transformed()
    return {
        (function, action, resource_name(target))
        # the functions the default NudgeFanoutMode deploys (NudgeBatchFunction's grants: test_least_privilege)
        for function in resources_of_type("AWS::Serverless::Function")
        if function in template["Resources"]
        for target, actions in granted(template, function).items()
        for action in actions
    }


def refused_partition_keys(partition_keys: dict[tuple[str, str, str], set[str]]) -> set[tuple[str, str, str, str]]:
    """Partition keys a call named that no statement granting it allows (``dynamodb:LeadingKeys``)."""
    template = transformed()
    refused = set()
    for (function, action, resource), keys in partition_keys.items():
        conditions = [
            statement.get("Condition")
            for statement in statements_of(template, function)
            if action in statement["Action"] and resource in resources_of(statement)
        ]
        if not conditions or None in conditions:
            continue  # not granted (the other assertion says so) or granted on any key
        for key in keys:
            if not any(allows_key(condition, key) for condition in conditions):
                refused.add((function, action, resource, key))
    return refused


def resources_of(statement: dict[str, Any]) -> set[str]:
    targets = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
    return {resource_name(json.dumps(target, sort_keys=True)) for target in targets}


def allows_key(condition: dict[str, Any], key: str) -> bool:
    (operator, test), *others = condition.items()
    assert not others and set(test) == {"dynamodb:LeadingKeys"}, condition
    patterns = test["dynamodb:LeadingKeys"]
    if operator == "ForAllValues:StringEquals":
        return key in patterns
    assert operator == "ForAllValues:StringLike", condition
    return any(fnmatchcase(key, pattern) for pattern in patterns)


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[CallRecorder]:
    recording = CallRecorder()
    make_api_call = botocore.client.BaseClient._make_api_call
    invoke = runner_lambda.InProcessLambda.invoke

    def recorded_call(client: Any, operation: str, params: dict[str, Any]) -> Any:
        service = client.meta.service_model.service_name
        recording.record(service, operation, params)
        if service in recording.unreachable:
            raise EndpointConnectionError(endpoint_url=client.meta.endpoint_url)
        return make_api_call(client, operation, params)

    def attributed_invoke(self: Any, function: Any, event: Any, environment: Any) -> Any:
        recording.function = function.logical_id
        recording.functions.add(function.logical_id)
        try:
            return invoke(self, function, event, environment)
        finally:
            recording.function = None

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", recorded_call)
    monkeypatch.setattr(runner_lambda.InProcessLambda, "invoke", attributed_invoke)
    yield recording


# Deployed with the account's limits, so the scheduler plans its cohorts' starts (and marks them).
LIMITS = {"ProviderTokensPerMinute": "2000000", "ProviderRequestsPerMinute": "10000"}


@pytest.fixture
def runner() -> Iterator[LocalRunner]:
    with LocalRunner(environ={"AWS_DEFAULT_REGION": "us-east-1"}, parameter_overrides=LIMITS) as local:
        yield local
        local.aws.reset()


class Api:
    """The runner's API as a signed-in user or the admin; remembers which routes it reached."""

    def __init__(self, runner: LocalRunner) -> None:
        self.runner = runner
        self.routes: set[tuple[str, str]] = set()

    def send(self, method: str, target: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
        """``target``: a route's path, called on the stage URL as a deployed client calls it, or a URL
        the API handed out (a 202's ``answerUrl``), already the path as called."""
        called, _, query = target.partition("?")
        called = called if called.startswith(f"/{STAGE}/") else f"/{STAGE}{called}"
        path = called.removeprefix(f"/{STAGE}")
        matched = self.runner.routes.match(method, path)
        if isinstance(matched, RouteMatch):
            self.routes.add((matched.route.method, matched.route.path))
        sent = [("Content-Type", "application/json"), *headers.items()]
        payload = b"" if body is None else json.dumps(body, ensure_ascii=False).encode()
        request = HttpRequest(method, called, query, [(key.replace("_", "-"), value) for key, value in sent], payload)
        response = self.runner.handle_http(request)
        return response.status, json.loads(response.body or b"null")

    def user(self, method: str, target: str, body: Any = None, **headers: str) -> tuple[int, Any]:
        return self.send(method, target, body, {"X-Local-User": USER, **headers})

    def admin(self, method: str, target: str, body: Any = None) -> tuple[int, Any]:
        return self.send(method, target, body, {"X-Local-Admin": ADMIN})

    def start_consented_interview(self, job_id: str) -> tuple[str, str]:
        """The user's interview for an open job, its notice accepted: (session id, its path)."""
        status, started = self.user("POST", "/interviews", {"jobId": job_id})
        assert status == 201, started
        interview = f"/interviews/{started['sessionId']}"
        consent = {"accepted": True, "noticeId": started["notice"]["noticeId"]}
        assert self.user("POST", f"{interview}/consent", consent)[0] == 200
        return str(started["sessionId"]), interview


def last_generation_run(now: datetime) -> datetime:
    """The latest hourly run (xx:05) at or before ``now`` that finds Tokyo at its generation hour:
    its local date is the user's today or yesterday, inside the generator's window."""
    local = now.astimezone(TOKYO).replace(hour=GENERATION_HOUR, minute=5, second=0, microsecond=0)
    if local > now:
        local -= timedelta(days=1)
    return local.astimezone(UTC)


def run_nudges(api: Api) -> None:
    runner = api.runner
    status, _ = api.user("PUT", "/nudges/profile", sample_body("nudges/put_profile.json"))
    assert status in {200, 201}
    assert api.user("PATCH", "/nudges/profile", {"nudgesEnabled": True})[0] == 200
    assert api.user("GET", "/nudges/profile")[0] == 200
    fired_at = last_generation_run(datetime.now(UTC))
    hourly = runner.schedules["NudgeSchedulerFunction"][0]
    assert runner.invoke("NudgeSchedulerFunction", scheduled_event(hourly, runner.region, fired_at))["queued"] == 1
    assert runner.deliver("NudgeQueue").succeeded == 1
    local_date = fired_at.astimezone(TOKYO).date()
    status, day = api.user("GET", f"/nudges/schedule?date={local_date.isoformat()}")
    assert status == 200, day
    run_stale_nudge_job(runner, local_date)
    run_pending_posts(api)
    # The user's nudge data, deleted: profile, schedule, posts (found by key) and the generator's record.
    status, deleted = api.user("DELETE", "/nudges/profile")
    assert status == 200 and deleted["deleted"]["generationRecords"] == 1, deleted
    assert api.admin("GET", "/api/admin/tiktok/pending")[1]["count"] == 0


def run_stale_nudge_job(runner: LocalRunner, local_date: date) -> None:
    """A job delivered long after its day (a redrive) is refused: Powertools releases its key."""
    stale = {"userId": USER, "localDate": (local_date - timedelta(days=10)).isoformat()}
    runner.send_message("NudgeQueue", json.dumps(stale))
    report = runner.deliver("NudgeQueue")
    assert (report.succeeded, report.moved_to_dead_letter_queue) == (0, 1), report.summary()


def run_pending_posts(api: Api) -> None:
    status, page = api.admin("GET", "/api/admin/tiktok/pending")
    assert status == 200 and page["count"] >= 1, page
    post_id = page["tiktokPosts"][0]["postId"]
    posted = f"/api/admin/tiktok/posts/{post_id}/posted"
    assert api.admin("POST", posted)[0] == 200
    assert api.admin("POST", posted)[1]["alreadyPosted"] is True
    assert api.admin("GET", "/api/admin/x/pending")[0] == 200
    assert api.admin("POST", "/api/admin/x/posts/x-unknown/posted")[0] == 404


def run_chat_and_templates(api: Api) -> None:
    status, session = api.user("POST", "/ai-agent/sessions", sample_body("chat/create_session.json"))
    assert status == 201, session
    session_path = f"/ai-agent/sessions/{session['sessionId']}"
    messages = f"{session_path}/messages"
    assert api.user("POST", messages, {"message": "面接の流れを作りたいです"})[0] == 200
    assert api.user("POST", messages, {"message": "選考は3段階です"}, Idempotency_Key="k-1")[0] == 200
    assert api.user("POST", messages, {"message": "選考は3段階です"}, Idempotency_Key="k-1")[0] == 200
    # A turn answered after its request: handed to ChatAnswerFunction, then read at its location.
    status, accepted = api.user("POST", messages, {"message": "内定後の流れも"}, Prefer="respond-async")
    assert status == 202, accepted
    assert api.runner.deliver("ChatAnswersQueue").succeeded == 1
    assert api.user("GET", accepted["answerUrl"])[0] == 200
    # A keyed message that fails releases its key, so that a retry runs again.
    unknown = f"/ai-agent/sessions/{UNKNOWN_SESSION}/messages"
    assert api.user("POST", unknown, {"message": "こんにちは"}, Idempotency_Key="k-2")[0] == 404
    assert api.user("GET", "/ai-agent/sessions?limit=5")[0] == 200
    assert api.user("GET", session_path)[0] == 200
    from_session = f"{session_path}/process-template"
    assert api.user("POST", from_session, {})[0] == 201  # the offline answer ends with a valid draft
    status, again = api.user("POST", from_session, {})  # a retry returns the template made the first time
    assert (status, again["created"]) == (200, False), again
    template = sample_body("templates/create_template.json")
    status, created = api.user("POST", "/process-templates", template)
    assert status == 201, created
    template_path = f"/process-templates/{created['templateId']}"
    assert api.user("GET", "/process-templates")[0] == 200
    assert api.user("GET", "/process-templates?search=%E6%9C%88%E6%AC%A1")[0] == 200
    assert api.user("GET", template_path)[0] == 200
    assert api.user("PUT", template_path, template)[0] == 200
    assert api.user("PATCH", template_path, {"name": f"{template['name']} v2"})[0] == 200
    assert api.user("DELETE", template_path)[0] == 200
    # The session goes with its messages and retry records; the template made from it stays, unlinked.
    assert api.user("DELETE", session_path)[0] == 200


def run_judge(api: Api) -> None:
    status, judged = api.admin("POST", "/judge", sample_body("judge/api-post-judge.json"))
    assert status == 200, judged


def run_interview(api: Api, recorder: CallRecorder) -> None:
    job = sample_body("jobs/create_job.json")
    job_path = f"/api/admin/jobs/{job['jobId']}"
    assert api.admin("POST", "/api/admin/jobs", job)[0] == 201
    version_two = {key: value for key, value in job.items() if key != "jobId"} | {"title": f"{job['title']} (2)"}
    assert api.admin("PUT", job_path, version_two)[0] == 200
    assert api.admin("GET", job_path)[0] == 200
    session_id, interview = api.start_consented_interview(job["jobId"])
    text = sample_body("interview/post_message.json")
    assert api.user("POST", f"{interview}/messages", text, Idempotency_Key="i-1")[0] == 200
    assert api.user("POST", f"{interview}/messages", text, Idempotency_Key="i-1")[0] == 200
    assert api.user("POST", f"{interview}/messages", {"text": "3年、駅前のカフェで働きました"})[0] == 200
    optional = next(field["field_id"] for field in job["fields"] if not field["required"])
    assert api.user("POST", f"{interview}/fields/{optional}/skip")[0] == 200
    # The correction is answered after its request: run by InterviewTurnFunction, read at its location.
    correction = {"text": "趣味はコーヒーの焙煎です"}
    status, accepted = api.user("POST", f"{interview}/fields/{optional}/correction", correction, Prefer="respond-async")
    assert status == 202, accepted
    assert api.runner.deliver("InterviewTurnsQueue").succeeded == 1
    assert api.user("GET", accepted["turnUrl"])[0] == 200
    assert api.user("GET", interview)[0] == 200
    status, mine = api.user("GET", "/interviews")
    assert status == 200 and [item["sessionId"] for item in mine["items"]] == [session_id], mine
    status, open_jobs = api.user("GET", "/jobs")
    assert status == 200 and [item["jobId"] for item in open_jobs["items"]] == [job["jobId"]], open_jobs
    status, catalog = api.admin("GET", "/api/admin/jobs?status=open")
    assert status == 200 and [item["jobId"] for item in catalog["items"]] == [job["jobId"]], catalog
    status, applications = api.admin("GET", f"{job_path}/applications")
    assert status == 200 and applications, applications
    assert api.admin("GET", f"{job_path}/applications/{session_id}")[0] == 200
    # The withdrawal's announcement cannot be published: it stays in the outbox for the relay.
    with recorder.service_unreachable("events"):
        assert api.user("DELETE", interview)[0] == 204
    relay_schedule = api.runner.schedules["ApplicationEventsRelayFunction"][0]
    # Only the grace (two minutes in AWS, so the relay never races the function that wrote the entry) is shortened.
    relayed = api.runner.invoke(
        "ApplicationEventsRelayFunction",
        scheduled_event(relay_schedule, api.runner.region),
        {"OUTBOX_GRACE_SECONDS": "0"},
    )
    assert relayed == {"pending": 1, "delivered": 1}
    assert api.admin("POST", f"{job_path}/close")[0] == 200


def gone_connection(runner: LocalRunner) -> None:
    """A connection of the user API Gateway closed without $disconnect reaching the table: the next
    answer's push finds it gone (410) and deletes it."""
    item = {"connectionId": {"S": "gone="}, "userId": {"S": USER}, "expiresAt": {"N": "4000000000"}}
    runner.aws.client("dynamodb").put_item(TableName="ConnectionsTable", Item=item)


def run_sockets(api: Api, recorder: CallRecorder, url: str) -> None:
    """The WebSocket API (served by the runner): the authorizer, a connection's life, messages by
    socket, and every function that stores an answer pushing it to the user's connections."""
    runner, ws_url = api.runner, url.replace("http://", "ws://") + f"/{STAGE}"
    with pytest.raises(InvalidStatus):  # the authorizer runs on a token (one of no pool here)
        connect(f"{ws_url}?idToken=not-a-token", open_timeout=60)
    job = {**sample_body("jobs/create_job.json"), "jobId": "job-sockets"}
    assert api.admin("POST", "/api/admin/jobs", job)[0] == 201
    _, interview = api.start_consented_interview(job["jobId"])
    status, session = api.user("POST", "/ai-agent/sessions", {})
    assert status == 201, session
    messages = f"/ai-agent/sessions/{session['sessionId']}/messages"
    with connect(f"{ws_url}?localUser={USER}", open_timeout=60) as ws:

        def sent(to: str, session_id: str, text: str, key: str, expected: str = "accepted") -> None:
            field = "message" if to == "chat" else "text"
            body = {"action": "sendMessage", "to": to, "sessionId": session_id, field: text, "clientMessageId": key}
            ws.send(json.dumps(body, ensure_ascii=False))
            for _ in range(20):  # the answers pushed meanwhile come first
                if json.loads(ws.recv(timeout=120))["type"] == expected:
                    return
            raise AssertionError(f"no {expected} frame")

        for pushed_by in ("ChatFunction", "ChatAnswerFunction", "InterviewFunction", "InterviewTurnFunction"):
            gone_connection(runner)
            if pushed_by == "ChatFunction":
                assert api.user("POST", messages, {"message": "面接の流れを"})[0] == 200
            elif pushed_by == "ChatAnswerFunction":
                assert api.user("POST", messages, {"message": "内定後も"}, Prefer="respond-async")[0] == 202
                assert runner.deliver("ChatAnswersQueue").succeeded == 1
            elif pushed_by == "InterviewFunction":
                assert api.user("POST", f"{interview}/messages", sample_body("interview/post_message.json"))[0] == 200
            else:
                status, _ = api.user("POST", f"{interview}/messages", {"text": "3年です"}, Prefer="respond-async")
                assert status == 202 and runner.deliver("InterviewTurnsQueue").succeeded == 1
        sent("chat", session["sessionId"], "選考は3段階です", "s-1")
        sent("chat", session["sessionId"], "選考は3段階です", "s-1")  # replayed
        sent("chat", UNKNOWN_SESSION, "こんにちは", "s-2", "error")  # its key released
        gone_connection(runner)
        with recorder.service_unreachable("sqs"):  # not handed over: the fallback answer, pushed from here
            sent("chat", session["sessionId"], "次は", "s-3", "done")
            assert json.loads(ws.recv(timeout=120))["type"] == "accepted"  # the route's answer: its done once
        sent("interview", interview.rsplit("/", 1)[-1], "カフェで働きました", "s-4")
        sent("interview", UNKNOWN_SESSION, "こんにちは", "s-5", "error")  # its key released
    disconnected = ("SocketConnectionFunction", "dynamodb:DeleteItem", "table:ConnectionsTable")
    for _ in range(400):  # $disconnect runs on the server's thread once the client has closed
        if disconnected in recorder.calls and recorder.function is None:
            break
        time.sleep(0.05)
    assert runner.deliver("ChatAnswersQueue").succeeded == 1 and runner.deliver("InterviewTurnsQueue").succeeded == 1


def store_openai_key(runner: LocalRunner, monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    """The key where the template's functions read it in AWS: the SecureString the template names,
    in the embedded moto server's Parameter Store; no OPENAI_API_KEY in the environment."""
    name = load_template()["Parameters"]["OpenAIApiKeyParameterName"]["Default"]
    ssm = boto3.client("ssm", endpoint_url=runner.aws.endpoints.dynamodb, region_name=runner.region)
    ssm.put_parameter(Name=f"/{name}", Value=key, Type="SecureString")
    monkeypatch.setenv("AWS_ENDPOINT_URL_SSM", runner.aws.endpoints.dynamodb)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def start_as_deployed(
    runner: LocalRunner, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> LocalRunner:
    """The template's configuration for AWS: AI_AGENT_MODE=openai and no key but its name in
    Parameter Store (the embedded moto server answers SSM too), so each model function reads it
    at its cold start; same tables and queues as ``runner``."""
    store_openai_key(runner, monkeypatch, "sk-local-never-sent")
    environ = {"AWS_DEFAULT_REGION": runner.region, "AI_AGENT_MODE": "openai", "OPENAI_BASE_URL": fake_openai.base_url}
    return LocalRunner(environ=environ, local_aws=runner.aws).start()


def run_deferred_nudge_user(deployed: LocalRunner) -> None:
    """A user whose plan cannot be made in the invocation's time (the model's pace here: 1 token/s)
    is deferred: their message comes back after a backoff the generator sets (ChangeMessageVisibility)."""
    today = datetime.now(TOKYO).date().isoformat()
    deployed.aws.client("dynamodb").put_item(
        TableName="UsersTable",
        Item={
            "userId": {"S": "user-deferred"},
            "problems": {"L": [{"S": "staying_up_late"}]},
            "preferredLanguage": {"S": "en"},
            "timezone": {"S": "Asia/Tokyo"},
            "nudgesEnabled": {"BOOL": True},
            "appVersion": {"S": "2.4.0"},
        },
    )
    url = deployed.queue_urls["NudgeQueue"]
    deployed.sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"userId": "user-deferred", "localDate": today}))
    (message,) = deployed.sqs.receive_message(QueueUrl=url, AttributeNames=["All"])["Messages"]
    event = sqs_event([message], deployed.queues["NudgeQueue"], deployed.region)
    result = deployed.invoke("NudgeGeneratorFunction", event, env_overrides={"OPENAI_TOKENS_PER_SECOND": "1"})
    assert result == {"batchItemFailures": [{"itemIdentifier": message["MessageId"]}]}
    deployed.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


def run_interview_turn_as_deployed(api: Api) -> None:
    """A turn handed to InterviewTurnFunction, which reads its key at its cold start."""
    job = sample_body("jobs/create_job.json") | {"jobId": "job-deployed-turn"}
    assert api.admin("POST", "/api/admin/jobs", job)[0] == 201
    _, interview = api.start_consented_interview(job["jobId"])
    assert api.user("POST", f"{interview}/messages", {"text": "こんにちは"}, Prefer="respond-async")[0] == 202
    assert api.runner.deliver("InterviewTurnsQueue").succeeded == 1
    # A turn answered in its request: InterviewFunction reads the key at this, its first model call.
    status, answered = api.user("POST", f"{interview}/messages", {"text": "バリスタ経験は3年です"})
    assert status == 200, answered


def run_model_functions_as_deployed(deployed: LocalRunner) -> None:
    """One request each that builds the model (the judge's reaches the fake OpenAI server)."""
    run_deferred_nudge_user(deployed)  # the generator's first (cold) start: its pace is set here
    api = Api(deployed)
    status, session = api.user("POST", "/ai-agent/sessions", {})
    assert status == 201
    messages = f"/ai-agent/sessions/{session['sessionId']}/messages"
    assert api.user("POST", messages, {"message": "あとで"}, Prefer="respond-async")[0] == 202
    assert deployed.deliver("ChatAnswersQueue").succeeded == 1  # the worker reads its key, then answers
    status, answered = api.user("POST", messages, {"message": "いま答えて"})  # ChatFunction's own first model call
    assert status in {200, 201}, answered
    run_interview_turn_as_deployed(api)
    assert api.user("GET", f"/interviews/{UNKNOWN_SESSION}")[0] == 404
    assert api.admin("POST", "/judge", sample_body("judge/api-post-judge.json"))[0] == 200
    tomorrow = (datetime.now(TOKYO) + timedelta(days=1)).date().isoformat()
    deployed.send_message("NudgeQueue", json.dumps({"userId": "user-who-left", "localDate": tomorrow}))
    assert deployed.deliver("NudgeQueue").succeeded == 1  # an unknown user is skipped


def test_every_call_the_product_makes_is_allowed_and_every_grant_is_used(
    runner: LocalRunner, recorder: CallRecorder, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = Api(runner)
    with serving(runner) as url:  # the WebSocket API too: every function that answers a user pushes
        run_nudges(api)
        run_chat_and_templates(api)
        run_judge(api)
        run_interview(api, recorder)
        run_sockets(api, recorder, url)
    assert recorder.functions == set(runner.functions)  # every function of the template ran
    assert api.routes == {(route.method, route.path) for route in runner.routes.routes}  # over every route
    with start_as_deployed(runner, fake_openai, monkeypatch) as deployed:
        run_model_functions_as_deployed(deployed)

    granted_calls = allowed()
    assert recorder.calls - granted_calls == set()  # nothing the code does is refused in AWS
    assert granted_calls - recorder.calls == NOT_REACHED  # nothing granted that the code never does
    assert refused_partition_keys(recorder.partition_keys) == set()  # nor on a key its statement excludes
