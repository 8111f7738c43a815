"""The applicant's daily token budget through InterviewFunction (docs/cost.md#a-daily-budget-per-user):
moto tables built from template.yaml, the offline model. A turn is counted to the applicant's local
day; once the day is spent the next message is 429 DAILY_BUDGET_EXCEEDED with Retry-After, and
nothing of it is run or stored."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from lambda_agents.spending import spending_day

from functions.interview import app as interview_app

from .conftest import (
    APPLICANT,
    SCRIPT,
    api_event,
    create,
    interview_tables,
    invoke,
    stored_items,
)

pytestmark = pytest.mark.integration

ZONE = "America/Sao_Paulo"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with interview_tables(monkeypatch, daily_budget=5000) as client:
        yield client


def send(session_id: str, text: str) -> Any:
    event = api_event(
        "POST",
        f"/interviews/{session_id}/messages",
        {"text": text},
        path_parameters={"sessionId": session_id},
        resource="/interviews/{sessionId}/messages",
    )
    event["requestContext"]["authorizer"]["claims"]["zoneinfo"] = ZONE
    return invoke(event)


def counters(client: Any) -> dict[tuple[str, str], int]:
    items = client.scan(TableName="UserSpendingTable")["Items"]
    return {(item["userId"]["S"], item["day"]["S"]): int(item["spent"]["N"]) for item in items}


def test_a_turn_counts_to_the_applicants_day_and_a_spent_day_refuses_the_next_message(aws: Any) -> None:
    session_id = create().body["sessionId"]
    today = spending_day(datetime.now(UTC), ZONE).day.isoformat()

    answered = send(session_id, SCRIPT[0])
    assert answered.status == 200, answered.body
    calls = len(interview_app.dependencies().model.calls)  # type: ignore[attr-defined]
    spent = counters(aws)[(APPLICANT, today)]
    assert calls > 0 and spent == answered.body["usage"]["totalTokens"]

    aws.update_item(
        TableName="UserSpendingTable",
        Key={"userId": {"S": APPLICANT}, "day": {"S": today}},
        UpdateExpression="SET spent = :budget",
        ExpressionAttributeValues={":budget": {"N": "5000"}},
    )
    before = stored_items(aws, session_id)
    refused = send(session_id, SCRIPT[1])

    assert refused.status == 429 and refused.body["error"]["code"] == "DAILY_BUDGET_EXCEEDED"
    assert "spent 5000 of 5000 tokens today" in refused.body["error"]["message"]
    assert 1 <= int(refused.headers["Retry-After"]) <= 25 * 3600
    assert len(interview_app.dependencies().model.calls) == calls  # type: ignore[attr-defined]
    assert stored_items(aws, session_id) == before
