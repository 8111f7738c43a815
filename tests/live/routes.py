"""Every route of the API once, in an order that gives each the state it needs.

The same scenario runs against a deployed stack (tests/live, Cognito token and SigV4) and, in
`make test`, against the local runner (tests/integration/runner/test_live_scenario_offline.py),
so the live suite's requests and expectations are checked offline before anyone spends a key.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parents[2]
Caller = Literal["user", "admin", "anonymous"]
# (caller, method, path, body) -> (status, parsed body)
Send = Callable[[Caller, str, str, Any], tuple[int, Any]]


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


def run_every_route(send: Send) -> RouteRun:
    run = RouteRun()
    session = run.call(
        send, "user", "POST", "/ai-agent/sessions", "/ai-agent/sessions", sample_body("chat/create_session.json"), {201}
    )
    session_id = session["sessionId"]
    messages = f"/ai-agent/sessions/{session_id}/messages"
    run.call(
        send,
        "user",
        "POST",
        "/ai-agent/sessions/{sessionId}/messages",
        messages,
        {"message": "月次決算の手順を作りたい"},
        {200},
    )
    # 201 when the answer carried a valid draft; 404 / 409 name why not (the model decides).
    run.call(
        send,
        "user",
        "POST",
        "/ai-agent/sessions/{sessionId}/process-template",
        f"/ai-agent/sessions/{session_id}/process-template",
        None,
        {201, 404, 409},
    )
    template = sample_body("templates/create_template.json")
    template["name"] = f"{template['name']} {uuid.uuid4().hex[:6]}"
    run.call(send, "user", "POST", "/process-templates", "/process-templates", template, {201})
    run.call(send, "user", "GET", "/process-templates", "/process-templates?search=%E6%9C%88%E6%AC%A1", None, {200})
    interview = run.call(
        send, "user", "POST", "/interviews", "/interviews", sample_body("interview/create_interview.json"), {201}
    )
    interview_path = f"/interviews/{interview['sessionId']}"
    run.call(
        send,
        "user",
        "POST",
        "/interviews/{sessionId}/messages",
        f"{interview_path}/messages",
        sample_body("interview/post_message.json"),
        {200},
    )
    run.call(send, "user", "GET", "/interviews/{sessionId}", interview_path, None, {200})
    run.call(send, "admin", "POST", "/judge", "/judge", sample_body("judge/api-post-judge.json"), {200})
    for channel in ("tiktok", "x"):
        run.call(send, "admin", "GET", f"/api/admin/{channel}/pending", f"/api/admin/{channel}/pending", None, {200})
        unknown = f"/api/admin/{channel}/posts/{channel}-{uuid.uuid4().hex}/posted"
        run.call(send, "admin", "POST", f"/api/admin/{channel}/posts/{{postId}}/posted", unknown, None, {404})
    # Without identity: API Gateway's 401 (Cognito) / 403 (IAM); the local runner answers 401 to both.
    run.call(
        send,
        "anonymous",
        "POST",
        "/ai-agent/sessions",
        "/ai-agent/sessions",
        sample_body("chat/create_session.json"),
        {401},
    )
    run.call(send, "anonymous", "GET", "/api/admin/x/pending", "/api/admin/x/pending", None, {401, 403})
    return run
