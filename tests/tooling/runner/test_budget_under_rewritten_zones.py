"""The budget through the local runner as a user who rewrites their own ``zoneinfo`` would use it
(``X-Local-Zoneinfo``: the claim a refreshed token carries once the user changed the attribute).
Once the budget is spent, no zone the user picks gives room again: Kiritimati (UTC+14) and Pago
Pago (UTC-11) are 25 hours apart, so at any moment one of them is on another date than UTC."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from devtools.runner import LocalRunner
from devtools.runner_api import STAGE, HttpRequest

pytestmark = pytest.mark.integration

USER = "zone-hopper"


@pytest.fixture(scope="module")
def runner() -> Iterator[LocalRunner]:
    environ = {"AWS_DEFAULT_REGION": "us-east-1", "AI_AGENT_MODE": "mock"}
    with LocalRunner(environ=environ, parameter_overrides={"UserDailyTokenBudget": "1"}) as started:
        try:
            yield started
        finally:
            started.aws.reset()


def send(runner: LocalRunner, path: str, body: dict[str, Any], zone: str | None = None) -> tuple[int, Any]:
    headers = [("X-Local-User", USER), ("Content-Type", "application/json")]
    if zone is not None:
        headers.append(("X-Local-Zoneinfo", zone))
    answer = runner.handle_http(HttpRequest("POST", f"/{STAGE}{path}", "", headers, json.dumps(body).encode()))
    return answer.status, json.loads(answer.body)


def test_given_the_budget_spent_then_no_zone_the_user_writes_into_their_token_gives_room_again(
    runner: LocalRunner,
) -> None:
    status, created = send(runner, "/ai-agent/sessions", {})
    assert status == 201, created
    messages = f"/ai-agent/sessions/{created['sessionId']}/messages"
    status, answered = send(runner, messages, {"message": "段取りを教えて"})  # below a budget of 1: let in
    assert status == 200 and answered["usage"]["tokens"] > 0, answered
    for zone in (None, "Pacific/Kiritimati", "Pacific/Pago_Pago", "Asia/Tokyo", "America/Los_Angeles"):
        status, refused = send(runner, messages, {"message": "もう一度"}, zone)
        assert (status, refused["error"]["code"]) == (429, "DAILY_BUDGET_EXCEEDED"), (zone, refused)
