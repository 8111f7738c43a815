"""Every route of the API once, in an order that gives each the state it needs.

The same scenario runs against a deployed stack (tests/live, Cognito token and SigV4) and, in
`make test`, against the local runner (tests/tooling/runner/test_live_scenario_offline.py),
so the live suite's requests and expectations are checked offline before anyone spends a key.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urljoin

from devtools.runner_template import route_specs
from devtools.template import load_template

ROOT = Path(__file__).resolve().parents[2]
Caller = Literal["user", "admin", "anonymous"]
# (caller, method, path, body) -> (status, parsed body); ``path`` is a route's path under the API's
# URL, or a ``HandedOut`` URL, which ``url_for`` resolves as a client does.
Send = Callable[[Caller, str, str, Any], tuple[int, Any]]


class HandedOut(str):
    """A URL the API handed out (a 202's ``answerUrl`` / ``turnUrl``, its ``Location``): followed as a
    client follows it, resolved against the URL it called, never appended to the API's URL (it
    already carries the stage or base path)."""


def url_for(api_url: str, path: str) -> str:
    """The URL a ``Send`` calls: a route's path under ``api_url``, or a handed-out URL resolved."""
    return urljoin(f"{api_url}/", path) if isinstance(path, HandedOut) else f"{api_url}{path}"


def sample_body(event_file: str) -> Any:
    return json.loads(json.loads((ROOT / "events" / event_file).read_text(encoding="utf-8"))["body"])


@dataclass
class RouteRun:
    calls: list[tuple[str, str, int]] = field(default_factory=list)  # method, template path, status

    def call(self, send: Send, caller: Caller, method: str, route: str, path: str, body: Any, ok: set[int]) -> Any:
        status, answer = send(caller, method, path, body)
        self.calls.append((method, route, status))
        assert status in ok, f"{method} {path} as {caller}: {status} {answer}"
        return answer

    def reached_routes(self) -> set[tuple[str, str]]:
        """The routes that answered as their handler: a success, or the 404 of an id nobody has
        (a 401 or 403 is the gateway refusing the caller before any handler runs)."""
        return {(method, route) for method, route, status in self.calls if status < 400 or status == 404}


def template_routes() -> set[tuple[str, str]]:
    """Every route template.yaml declares, as (method, path): what one run must reach."""
    return {(route.method, route.path) for route in route_specs(load_template())}


def run_every_route(send: Send) -> RouteRun:
    run = RouteRun()
    _nudges(send, run)
    _chat_and_templates(send, run)
    run.call(send, "admin", "POST", "/judge", "/judge", sample_body("judge/api-post-judge.json"), {200})
    _interview(send, run)
    for channel in ("tiktok", "x"):
        run.call(send, "admin", "GET", f"/api/admin/{channel}/pending", f"/api/admin/{channel}/pending", None, {200})
        unknown = f"/api/admin/{channel}/posts/{channel}-{uuid.uuid4().hex}/posted"
        run.call(send, "admin", "POST", f"/api/admin/{channel}/posts/{{postId}}/posted", unknown, None, {404})
    # Without identity, API Gateway's own answers in the API's error shape (its gateway responses,
    # which the local runner reads from the template): 401 on a Cognito route, 403 on an IAM one.
    refused = run.call(
        send,
        "anonymous",
        "POST",
        "/ai-agent/sessions",
        "/ai-agent/sessions",
        sample_body("chat/create_session.json"),
        {401},
    )
    assert refused["error"]["code"] == "UNAUTHORIZED", refused
    unsigned = run.call(send, "anonymous", "GET", "/api/admin/x/pending", "/api/admin/x/pending", None, {403})
    assert unsigned["error"]["code"] == "MISSING_AUTHENTICATION_TOKEN", unsigned
    return run


def _nudges(send: Send, run: RouteRun) -> None:
    profile = sample_body("nudges/put_profile.json")
    run.call(send, "user", "PUT", "/nudges/profile", "/nudges/profile", profile, {200, 201})
    run.call(send, "user", "PATCH", "/nudges/profile", "/nudges/profile", {"nudgesEnabled": True}, {200})
    run.call(send, "user", "GET", "/nudges/profile", "/nudges/profile", None, {200})
    # 404 until the generator has run for the day (a fresh stack has no schedule yet).
    run.call(send, "user", "GET", "/nudges/schedule", "/nudges/schedule", None, {200, 404})
    # The user's nudge data deleted (everything the generator wrote too); then there is none.
    deleted = run.call(send, "user", "DELETE", "/nudges/profile", "/nudges/profile", None, {200})
    assert deleted["deleted"]["profiles"] == 1, deleted
    run.call(send, "user", "DELETE", "/nudges/profile", "/nudges/profile", None, {404})
    run.call(send, "user", "GET", "/nudges/profile", "/nudges/profile", None, {404})


def _chat_and_templates(send: Send, run: RouteRun) -> None:
    session = run.call(
        send, "user", "POST", "/ai-agent/sessions", "/ai-agent/sessions", sample_body("chat/create_session.json"), {201}
    )
    session_id = session["sessionId"]
    session_path = f"/ai-agent/sessions/{session_id}"
    posted = run.call(
        send,
        "user",
        "POST",
        "/ai-agent/sessions/{sessionId}/messages",
        f"{session_path}/messages",
        {"message": "月次決算の手順を作りたい"},
        {200, 202},  # 202: the answer did not fit in the request at the model's pace; read it below
    )
    # The answer to message 1, read at its location (the one a 202 handed out, followed as a client
    # follows it): there (200), or still being written (202).
    location = HandedOut(posted["answerUrl"]) if posted.get("status") == "pending" else f"{session_path}/messages/2"
    run.call(send, "user", "GET", "/ai-agent/sessions/{sessionId}/messages/{seq}", location, None, {200, 202})
    run.call(send, "user", "GET", "/ai-agent/sessions", "/ai-agent/sessions?limit=5", None, {200})
    run.call(send, "user", "GET", "/ai-agent/sessions/{sessionId}", session_path, None, {200})
    # 201 when the answer carried a valid draft; 404 / 409 name why not (the model decides).
    run.call(
        send,
        "user",
        "POST",
        "/ai-agent/sessions/{sessionId}/process-template",
        f"{session_path}/process-template",
        None,
        {201, 404, 409},
    )
    template = sample_body("templates/create_template.json")
    template["name"] = f"{template['name']} {uuid.uuid4().hex[:6]}"
    created = run.call(send, "user", "POST", "/process-templates", "/process-templates", template, {201})
    template_path = f"/process-templates/{created['templateId']}"
    run.call(send, "user", "GET", "/process-templates", "/process-templates?search=%E6%9C%88%E6%AC%A1", None, {200})
    run.call(send, "user", "GET", "/process-templates/{templateId}", template_path, None, {200})
    run.call(send, "user", "PUT", "/process-templates/{templateId}", template_path, template, {200})
    renamed = {"name": f"{template['name']} v2"}
    run.call(send, "user", "PATCH", "/process-templates/{templateId}", template_path, renamed, {200})
    run.call(send, "user", "DELETE", "/process-templates/{templateId}", template_path, None, {200})
    run.call(send, "user", "DELETE", "/ai-agent/sessions/{sessionId}", session_path, None, {200})


def _read_turn_when_ready(send: Send, run: RouteRun, turn_url: str, give_up_s: float = 300.0) -> None:
    """Poll a turn handed to the worker until its reply is there (the next turn waits for it)."""
    started = time.monotonic()
    while True:
        reply = run.call(send, "user", "GET", "/interviews/{sessionId}/turns/{turnId}", turn_url, None, {200, 202})
        if reply.get("status") != "pending":
            return
        assert time.monotonic() - started < give_up_s, f"no reply at {turn_url} after {give_up_s:.0f} s"
        time.sleep(2)


def _interview(send: Send, run: RouteRun) -> None:
    job = sample_body("jobs/create_job.json")
    job["jobId"] = f"job-live-{uuid.uuid4().hex[:8]}"
    job_path = f"/api/admin/jobs/{job['jobId']}"
    run.call(send, "admin", "POST", "/api/admin/jobs", "/api/admin/jobs", job, {201})
    version_two = {key: value for key, value in job.items() if key != "jobId"} | {"title": f"{job['title']} (2)"}
    run.call(send, "admin", "PUT", "/api/admin/jobs/{jobId}", job_path, version_two, {200})
    run.call(send, "admin", "GET", "/api/admin/jobs/{jobId}", job_path, None, {200})
    started = run.call(send, "user", "POST", "/interviews", "/interviews", {"jobId": job["jobId"]}, {201})
    interview_path = f"/interviews/{started['sessionId']}"
    consent = {"accepted": True, "noticeId": started["notice"]["noticeId"]}
    run.call(send, "user", "POST", "/interviews/{sessionId}/consent", f"{interview_path}/consent", consent, {200})
    answered = run.call(
        send,
        "user",
        "POST",
        "/interviews/{sessionId}/messages",
        f"{interview_path}/messages",
        sample_body("interview/post_message.json"),
        {200, 202},  # 202: the turn did not fit in its request at the model's pace; its reply comes later
    )
    if answered.get("status") == "pending":
        _read_turn_when_ready(send, run, HandedOut(answered["turnUrl"]))
    else:  # the turn ran in its request: a turn id nobody was given is not found
        unknown = f"{interview_path}/turns/1795555555555-0123abcd"
        run.call(send, "user", "GET", "/interviews/{sessionId}/turns/{turnId}", unknown, None, {404})
    optional = next(field["field_id"] for field in job["fields"] if not field["required"])
    run.call(
        send,
        "user",
        "POST",
        "/interviews/{sessionId}/fields/{fieldId}/skip",
        f"{interview_path}/fields/{optional}/skip",
        None,
        {200},
    )
    # A skipped field can be answered after all: the correction reopens it.
    run.call(
        send,
        "user",
        "POST",
        "/interviews/{sessionId}/fields/{fieldId}/correction",
        f"{interview_path}/fields/{optional}/correction",
        {"text": "趣味はコーヒーの焙煎です"},
        {200},
    )
    run.call(send, "user", "GET", "/interviews/{sessionId}", interview_path, None, {200})
    # The listings read indexes (eventually consistent): by now, after the turns, the job is in both
    # and the interview in the applicant's own list.
    open_jobs = run.call(send, "user", "GET", "/jobs", "/jobs?limit=100", None, {200})
    assert job["jobId"] in [item["jobId"] for item in open_jobs["items"]], open_jobs
    catalog = run.call(send, "admin", "GET", "/api/admin/jobs", "/api/admin/jobs?status=open&limit=100", None, {200})
    assert job["jobId"] in [item["jobId"] for item in catalog["items"]], catalog
    mine = run.call(send, "user", "GET", "/interviews", "/interviews?limit=100", None, {200})
    assert started["sessionId"] in [item["sessionId"] for item in mine["items"]], mine
    applications = f"{job_path}/applications"
    run.call(send, "admin", "GET", "/api/admin/jobs/{jobId}/applications", applications, None, {200})
    application = f"{applications}/{started['sessionId']}"
    run.call(send, "admin", "GET", "/api/admin/jobs/{jobId}/applications/{applicationId}", application, None, {200})
    run.call(send, "user", "DELETE", "/interviews/{sessionId}", interview_path, None, {204})
    run.call(send, "admin", "POST", "/api/admin/jobs/{jobId}/close", f"{job_path}/close", None, {200})
