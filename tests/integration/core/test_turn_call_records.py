"""A handed-over turn's paid calls on moto (InterviewsTable built from template.yaml): what the
request writes the worker reads back, answer for answer; a turn's record is written once, kept a
day, and deleted with the interview's other items when the applicant withdraws."""

from __future__ import annotations

import time
from typing import Any

import pytest
from lambda_agents.interview.paid_calls import PaidCall, PaidTurnCalls
from lambda_agents.llm.types import ChatResponse, ToolCall, Usage
from lambda_agents.storage.dynamodb import ConditionFailed
from lambda_agents.storage.turn_calls import DynamoTurnCallRecords

pytestmark = pytest.mark.integration
TABLES = ["InterviewsTable"]
SESSION = "0123456789abcdef0123456789abcdef"
TURN = "1795555555555-0123abcd"


def paid(version: int = 3) -> PaidTurnCalls:
    asked = ChatResponse(
        None,
        "tool_calls",
        tool_calls=(ToolCall("call_1", "ask", '{"message": "こんにちは"}'),),
        usage=Usage(1200, 20, cached_prompt_tokens=1024),
        model="gpt-4o-2024-08-06",
        service_tier="default",
    )
    verdict = ChatResponse('{"passed": true, "violations": null}', "stop", usage=Usage(800, 12), model="gpt-4o")
    return PaidTurnCalls(
        SESSION,
        TURN,
        version,
        (PaidCall("interview.greeter", "a" * 64, asked), PaidCall("interview.quick_check", "b" * 64, verdict)),
    )


def test_what_the_request_writes_the_worker_reads_back(aws: Any) -> None:
    records = DynamoTurnCallRecords("InterviewsTable")
    assert records.read(SESSION, TURN) is None
    records.write(paid())
    assert records.read(SESSION, TURN) == paid()
    (item,) = aws.scan(TableName="InterviewsTable")["Items"]
    assert (item["pk"]["S"], item["sk"]["S"]) == (f"SESSION#{SESSION}", f"CALLS#{TURN}")
    assert 0 < int(item["expiresAt"]["N"]) - time.time() <= 86_400


def test_a_turns_record_is_written_once(aws: Any) -> None:
    records = DynamoTurnCallRecords("InterviewsTable")
    records.write(paid())
    with pytest.raises(ConditionFailed):
        records.write(paid(version=4))
    stored = records.read(SESSION, TURN)
    assert stored is not None and stored.session_version == 3
