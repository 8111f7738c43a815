"""Access, the other half: another user's resource is a 404 on every route that names one, through
the local runner's HTTP API (the template's routes and environments, moto). Every route of the
chat, template and user nudge functions is covered: a route whose path names a resource this test
cannot create fails here until it can. The owner's data is unchanged afterwards, and the owner
still reaches it. Routes without an id (the nudge profile and schedule) only ever read the
caller's own data: the intruder gets its own 404, never the owner's, and deleting its own nudge data
leaves the owner's as it was. The applicant's list of jobs is the same for every user: open jobs
only, never a closed one. An applicant's list of interviews holds their own only, and a cursor
issued to another applicant is a 400."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from boto3.dynamodb.types import TypeDeserializer

from devtools.runner import LocalRunner
from devtools.runner_api import STAGE, HttpRequest
from devtools.runner_template import RouteSpec, route_specs
from devtools.template import load_template
from tests.integration.nudges.conftest import TODAY
from tests.live.routes import sample_body

pytestmark = pytest.mark.integration

FUNCTIONS = ("ChatFunction", "ProcessTemplatesFunction", "NudgesApiFunction")
ROUTES = [route for route in route_specs(load_template()) if route.function_id in FUNCTIONS]
OWNER, INTRUDER = "owner-1", "intruder-1"
STEPS = [{"seq": 1, "name": "準備", "basis": "goal", "offsetDays": -7}]
BODIES = {
    ("POST", "/ai-agent/sessions/{sessionId}/messages"): {"message": "見せて"},
    ("PUT", "/process-templates/{templateId}"): {"name": "乗っ取り", "stepTemplates": STEPS},
    ("PATCH", "/process-templates/{templateId}"): {"name": "乗っ取り"},
}
DATE = TODAY  # the generator makes only days around the user's today


def http(runner: LocalRunner, method: str, path: str, user: str, body: Any = None, query: str = "") -> tuple[int, Any]:
    payload = b"" if body is None else json.dumps(body, ensure_ascii=False).encode()
    headers = [("Content-Type", "application/json"), ("X-Local-User", user)]
    response = runner.handle_http(HttpRequest(method, f"/{STAGE}{path}", query, headers, payload))  # the stage URL
    return response.status, json.loads(response.body or b"null")


@pytest.fixture(scope="module")
def owned(runner: LocalRunner) -> dict[str, str]:
    """One resource of the owner per kind of path parameter."""
    status, session = http(runner, "POST", "/ai-agent/sessions", OWNER, {"context": {"processType": "中途採用"}})
    assert status == 201
    session_id = session["sessionId"]
    assert http(runner, "POST", f"/ai-agent/sessions/{session_id}/messages", OWNER, {"message": "段取り"})[0] == 200
    status, template = http(runner, "POST", "/process-templates", OWNER, {"name": "月次決算", "stepTemplates": STEPS})
    assert status == 201
    # "seq": the answer to the owner's message (seq 1), read back at /messages/2.
    return {"sessionId": session_id, "templateId": template["templateId"], "seq": "2"}


def snapshot(runner: LocalRunner) -> dict[str, list[dict[str, Any]]]:
    client = runner.aws.client("dynamodb")
    deserializer = TypeDeserializer()
    tables = {}
    for name in ("ChatTable", "ProcessTemplatesTable", "UsersTable", "SchedulesTable", "NudgeIdempotencyTable"):
        scanned = client.scan(TableName=name)["Items"]
        rows = [{key: deserializer.deserialize(value) for key, value in item.items()} for item in scanned]
        tables[name] = sorted(rows, key=repr)
    return tables


def _ids(route: RouteSpec) -> str:
    return f"{route.method} {route.path}"


@pytest.mark.parametrize("route", [r for r in ROUTES if "{" in r.path], ids=_ids)
def test_another_users_resource_is_a_404_and_stays_as_it_was(
    runner: LocalRunner, owned: dict[str, str], route: RouteSpec
) -> None:
    names = re.findall(r"\{([^}+]+)\+?\}", route.path)
    assert set(names) <= set(owned), f"{_ids(route)}: no resource of the owner for {names}; add one to `owned`"
    path = route.path
    for name in names:
        path = path.replace(f"{{{name}}}", owned[name])
    before = snapshot(runner)

    status, body = http(runner, route.method, path, INTRUDER, BODIES.get((route.method, route.path)))

    assert status == 404, body
    assert body["error"]["code"].endswith("NOT_FOUND")
    assert snapshot(runner) == before
    if route.method == "GET":
        assert http(runner, "GET", path, OWNER)[0] == 200


def test_the_nudge_routes_only_ever_reach_the_callers_own_profile_and_day(runner: LocalRunner) -> None:
    profile = {"problems": ["anxiety"], "preferredLanguage": "en", "timezone": "Asia/Tokyo", "nudgesEnabled": True}
    assert http(runner, "PUT", "/nudges/profile", OWNER, profile)[0] == 201
    runner.invoke("NudgeGeneratorFunction", _job(OWNER))
    assert http(runner, "GET", "/nudges/schedule", OWNER, query=f"date={DATE}")[0] == 200

    assert http(runner, "GET", "/nudges/profile", INTRUDER)[0] == 404
    assert http(runner, "GET", "/nudges/schedule", INTRUDER, query=f"date={DATE}")[0] == 404
    assert http(runner, "PATCH", "/nudges/profile", INTRUDER, {"nudgesEnabled": False})[0] == 404
    before = snapshot(runner)
    status, body = http(runner, "DELETE", "/nudges/profile", INTRUDER)
    assert status == 404 and body["error"]["code"] == "PROFILE_NOT_FOUND"
    assert snapshot(runner) == before
    # The intruder's own data, generated and deleted: the owner's is exactly as it was.
    assert http(runner, "PUT", "/nudges/profile", INTRUDER, profile)[0] == 201
    runner.invoke("NudgeGeneratorFunction", _job(INTRUDER))
    assert http(runner, "DELETE", "/nudges/profile", INTRUDER)[0] == 200
    assert snapshot(runner) == before
    assert http(runner, "GET", "/nudges/profile", OWNER)[1]["nudgesEnabled"] is True
    assert http(runner, "GET", "/nudges/schedule", OWNER, query=f"date={DATE}")[0] == 200


def test_every_applicant_sees_the_same_open_jobs_and_never_a_closed_one(runner: LocalRunner) -> None:
    def admin(method: str, path: str, body: Any = None) -> int:
        headers = [("Content-Type", "application/json"), ("X-Local-Admin", "arn:aws:iam::123456789012:user/ops")]
        payload = b"" if body is None else json.dumps(body, ensure_ascii=False).encode()
        return runner.handle_http(HttpRequest(method, f"/{STAGE}{path}", "", headers, payload)).status

    job = sample_body("jobs/create_job.json")
    for job_id in ("job-open", "job-closed"):
        assert admin("POST", "/api/admin/jobs", {**job, "jobId": job_id}) == 201
    assert admin("POST", "/api/admin/jobs/job-closed/close") == 200

    for user in (OWNER, INTRUDER):
        status, listing = http(runner, "GET", "/jobs", user)
        assert status == 200
        assert [item["jobId"] for item in listing["items"]] == ["job-open"]
        notice = [{key: field[key] for key in ("field_id", "label", "required")} for field in job["fields"]]
        assert listing["items"][0]["fields"] == notice  # no intent, done criteria or required facts


def _job(user_id: str) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": "m1",
                "receiptHandle": "r1",
                "body": json.dumps({"userId": user_id, "localDate": DATE}),
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:NudgeQueue",
                "awsRegion": "us-east-1",
            }
        ]
    }


def test_an_applicants_list_of_interviews_holds_their_own_and_never_another_users(runner: LocalRunner) -> None:
    headers = [("Content-Type", "application/json"), ("X-Local-Admin", "arn:aws:iam::123456789012:user/ops")]
    job = {**sample_body("jobs/create_job.json"), "jobId": "job-interviews"}
    created = runner.handle_http(HttpRequest("POST", f"/{STAGE}/api/admin/jobs", "", headers, json.dumps(job).encode()))
    assert created.status == 201
    started: dict[str, list[str]] = {OWNER: [], INTRUDER: []}
    for user, count in ((OWNER, 2), (INTRUDER, 1)):
        for _ in range(count):
            status, interview = http(runner, "POST", "/interviews", user, {"jobId": job["jobId"]})
            assert status == 201, interview
            started[user].append(interview["sessionId"])
    closing = HttpRequest("POST", f"/{STAGE}/api/admin/jobs/job-interviews/close", "", headers, b"")
    assert runner.handle_http(closing).status == 200  # the open-jobs list stays as the other test expects

    for user, own in started.items():
        status, listing = http(runner, "GET", "/interviews", user)
        assert status == 200
        assert [item["sessionId"] for item in listing["items"]] == own[::-1]
    status, page = http(runner, "GET", "/interviews", OWNER, query="limit=1")
    assert status == 200 and page["nextCursor"]
    status, refused = http(runner, "GET", "/interviews", INTRUDER, query=f"cursor={page['nextCursor']}")
    assert status == 400, refused
