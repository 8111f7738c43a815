"""The applicant's token budget through InterviewFunction (docs/cost.md#a-daily-budget-per-user):
moto tables built from template.yaml, the offline model. A turn is counted to the applicant's
window of the last 24 hours, whatever zone the token claims; once it is spent the next message is
429 DAILY_BUDGET_EXCEEDED with Retry-After, and nothing of it is run or stored."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

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
    event["requestContext"]["authorizer"]["claims"]["zoneinfo"] = ZONE  # read by nothing
    return invoke(event)


def window(client: Any) -> dict[str, int]:
    """The applicant's tokens per slot."""
    (item,) = client.scan(TableName="UserSpendingTable")["Items"]
    assert (item["userId"]["S"], item["day"]["S"]) == (APPLICANT, "window")
    return {slot: int(tokens["N"]) for slot, tokens in item["slots"]["M"].items()}


def test_a_turn_counts_to_the_applicants_day_and_a_spent_day_refuses_the_next_message(aws: Any) -> None:
    session_id = create().body["sessionId"]

    answered = send(session_id, SCRIPT[0])
    assert answered.status == 200, answered.body
    calls = len(interview_app.dependencies().model.calls)  # type: ignore[attr-defined]
    (slot, spent), *_ = window(aws).items()
    assert calls > 0 and spent == answered.body["usage"]["totalTokens"]

    aws.update_item(
        TableName="UserSpendingTable",
        Key={"userId": {"S": APPLICANT}, "day": {"S": "window"}},
        UpdateExpression="SET slots.#slot = :budget",
        ExpressionAttributeNames={"#slot": slot},
        ExpressionAttributeValues={":budget": {"N": "5000"}},
    )
    before = stored_items(aws, session_id)
    refused = send(session_id, SCRIPT[1])

    assert refused.status == 429 and refused.body["error"]["code"] == "DAILY_BUDGET_EXCEEDED"
    assert "spent 5000 of 5000 tokens in the last 24 hours" in refused.body["error"]["message"]
    assert 86_400 <= int(refused.headers["Retry-After"]) <= 86_400 + 600
    assert len(interview_app.dependencies().model.calls) == calls  # type: ignore[attr-defined]
    assert stored_items(aws, session_id) == before
