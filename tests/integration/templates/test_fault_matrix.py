"""Fault cells for ProcessTemplatesFunction: DynamoDB throttling, a conflicting and a
refused transaction. A template is written whole or not at all, whatever fails."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.chat.chat_api import items, send, start_session, templates
from tests.support.dynamo_faults import THROTTLED, TRANSACTION_CANCELLED, dynamo_fault

pytestmark = pytest.mark.integration

BODY = {
    "name": "月次決算",
    "stepTemplates": [
        {"seq": 1, "name": "締め", "basis": "goal", "offsetDays": -5},
        {"seq": 2, "name": "試算表", "basis": "prev", "offsetDays": 2, "dependsOn": [1]},
    ],
}


@pytest.mark.parametrize("reason", ["ThrottlingError", "ProvisionedThroughputExceeded", "TransactionConflict"])
def test_a_throttled_or_conflicting_transaction_answers_503_and_writes_nothing(aws: Any, reason: str) -> None:
    with dynamo_fault("TransactWriteItems", TRANSACTION_CANCELLED, reasons=[reason, "None", "None"]) as fault:
        answer = templates("POST", "/process-templates", BODY)
    assert answer.status == 503 and answer.headers["Retry-After"] == "1" and fault.fired == 1
    assert items(aws, "ProcessTemplatesTable") == []


def test_a_refused_transaction_for_a_new_template_answers_409_and_writes_nothing(aws: Any) -> None:
    with dynamo_fault("TransactWriteItems", TRANSACTION_CANCELLED, reasons=["ConditionalCheckFailed", "None", "None"]):
        answer = templates("POST", "/process-templates", BODY)
    assert answer.status == 409 and answer.body["error"]["code"] == "TEMPLATE_ID_TAKEN"
    assert items(aws, "ProcessTemplatesTable") == []


def test_a_refused_transaction_from_a_session_without_an_existing_template_answers_409(aws: Any) -> None:
    session_id = start_session()
    send(session_id, "お願いします")
    with dynamo_fault("TransactWriteItems", TRANSACTION_CANCELLED, reasons=["ConditionalCheckFailed"]):
        answer = templates("POST", f"/ai-agent/sessions/{session_id}/process-template")
    assert answer.status == 409 and items(aws, "ProcessTemplatesTable") == []


def test_a_throttled_session_read_answers_503(aws: Any) -> None:
    session_id = start_session()
    send(session_id, "お願いします")
    with dynamo_fault("GetItem", THROTTLED):
        assert templates("POST", f"/ai-agent/sessions/{session_id}/process-template").status == 503
    assert items(aws, "ProcessTemplatesTable") == []


def test_a_throttled_search_answers_503(aws: Any) -> None:
    with dynamo_fault("Query", THROTTLED):
        answer = templates("GET", "/process-templates", query={"search": "決算"})
    assert answer.status == 503 and answer.body["error"]["code"] == "STORAGE_BUSY"


def test_after_a_throttled_write_the_same_request_succeeds_whole(aws: Any) -> None:
    with dynamo_fault("TransactWriteItems", TRANSACTION_CANCELLED, times=1, reasons=["ThrottlingError"]):
        assert templates("POST", "/process-templates", BODY).status == 503
        assert templates("POST", "/process-templates", BODY).status == 201
    assert [i["sk"] for i in items(aws, "ProcessTemplatesTable")] == ["META", "STEP#001", "STEP#002"]
