"""The user's token budget end to end (docs/cost.md#a-daily-budget-per-user):
ChatFunction and ChatAnswerFunction on moto tables built from template.yaml, the real openai client
against the fake OpenAI server, which bills every request in its ledger as the provider does.

With USER_DAILY_TOKEN_BUDGET=6000 and answers of 800 tokens, the user is refused with
DAILY_BUDGET_EXCEEDED and a Retry-After until enough of the last 24 hours' tokens age out; the
provider hears nothing after that, and billed at most the budget plus one call, whatever zone the
user's token claims. A turn accepted (202) before the budget was spent is finished by the worker
and counted to the slot of its request.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from devtools.fake_openai import FakeOpenAIServer, Reply
from functions.chat_answers import app as answers_app
from tests.support.api_events import Answer
from tests.support.lambda_invocation import deliver_one

from .chat_api import (
    api_event,
    chat,
    chat_app,
    chat_tables,
    clear_caches,
    context,
    items,
    start_session,
    use_fake_openai,
)

pytestmark = pytest.mark.integration

USER = "user-1"
TOKYO = "Asia/Tokyo"
ANSWER = "月次決算の段取りを五つの工程に分けました。"
CALL_TOKENS = 800  # 600 prompt + 200 completion, as the fake bills each answer


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with chat_tables(monkeypatch, _reset, daily_budget=6000) as client:
        yield client


def _reset() -> None:
    clear_caches()
    answers_app.dependencies.reset()


@pytest.fixture
def provider(aws: Any, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAIServer:
    use_fake_openai(monkeypatch, fake_openai.base_url)
    answers_app.dependencies.reset()
    return fake_openai


def answers(count: int) -> list[Reply]:
    return [Reply(content=ANSWER, prompt_tokens=600, completion_tokens=200) for _ in range(count)]


def send_from_tokyo(session_id: str, message: str, headers: dict[str, str] | None = None) -> Answer:
    event = api_event("POST", f"/ai-agent/sessions/{session_id}/messages", {"message": message}, headers=headers)
    event["requestContext"]["authorizer"]["claims"]["zoneinfo"] = TOKYO  # read by nothing
    return Answer.of(chat_app.lambda_handler(event, context()))


def billed(server: FakeOpenAIServer) -> int:
    return server.billed_prompt_tokens() + server.billed_completion_tokens()


def window(aws: Any) -> tuple[int, int]:
    """The user's ledger item: the tokens its slots hold, and what turns in flight hold."""
    (item,) = aws.scan(TableName="UserSpendingTable")["Items"]
    assert (item["userId"]["S"], item["day"]["S"]) == (USER, "window")
    slots = sum(int(tokens["N"]) for tokens in item["slots"]["M"].values())
    return slots, sum(int(held["M"]["tokens"]["N"]) for held in item["held"]["M"].values())


def test_given_a_budget_of_6000_and_answers_of_800_tokens_then_the_user_is_refused_once_the_day_is_spent(
    provider: FakeOpenAIServer, aws: Any
) -> None:
    provider.enqueue(*answers(8))  # 7 answers leave 5,600 < 6,000: the 8th is let in, the 9th is not
    session_id = start_session()
    started = datetime.now(UTC)
    answered = 0
    for number in range(12):
        answer = send_from_tokyo(session_id, f"工程{number}を足してください")
        if answer.status != 200:
            break
        assert answer.body["usage"]["tokens"] == CALL_TOKENS
        answered += 1
    before = datetime.now(UTC)
    calls_before_refusal = len(provider.requests)

    assert answer.status == 429, answer.body
    error = answer.body["error"]
    assert error["code"] == "DAILY_BUDGET_EXCEEDED"
    assert f"spent {answered * CALL_TOKENS} of 6000 tokens in the last 24 hours" in error["message"]
    assert error["details"] == {
        "spentTokens": answered * CALL_TOKENS,
        "reservedTokens": 0,
        "budgetTokens": 6000,
        "reason": "spent",
    }
    wait = int(answer.headers["Retry-After"])
    first_slot_ages_out = math.floor(started.timestamp() / 600) * 600 + 600 + 86_400
    # When the first answers' slot is 24 hours old: 24 h 0-10 min after they were spent, in any zone.
    assert first_slot_ages_out - before.timestamp() <= wait <= first_slot_ages_out - started.timestamp() + 1

    again = send_from_tokyo(session_id, "もう一度")
    assert again.status == 429 and again.body["error"]["code"] == "DAILY_BUDGET_EXCEEDED"
    assert len(provider.requests) == calls_before_refusal == answered == 8  # no model call after the refusal
    assert 6000 <= billed(provider) <= 6000 + CALL_TOKENS  # at most the budget plus one call's worth
    # Nothing is stored for a refused message: each answered turn's two messages only.
    assert len(items(aws, "ChatTable", "MSG#")) == 2 * answered
    assert window(aws) == (billed(provider), 0)


def test_given_a_turn_accepted_before_the_day_is_spent_then_the_worker_finishes_it_and_counts_it_to_that_day(
    provider: FakeOpenAIServer, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = boto3.client("sqs").create_queue(QueueName="ChatAnswersQueue")["QueueUrl"]
    monkeypatch.setenv("CHAT_ANSWERS_QUEUE_URL", url)
    chat_app.dependencies.reset()
    accepted_session, other_session = start_session(), start_session()
    provider.enqueue(*answers(1))  # the accepted turn's, or the refused message's: the worker takes it

    accepted = send_from_tokyo(accepted_session, "あとで答えてください", headers={"Prefer": "respond-async"})
    assert accepted.status == 202, accepted.body
    reserved = window(aws)[1]
    assert reserved > 1200  # the first call's prompt estimate and max_tokens, kept for the worker
    answered = 0
    for number in range(10):  # (6,000 - the reservation) / 800 answers at most
        answer = send_from_tokyo(other_session, f"質問{number}")
        if answer.status != 200:
            break
        answered += 1
        provider.enqueue(*answers(1))
    assert answer.status == 429 and answer.body["error"]["code"] == "DAILY_BUDGET_EXCEEDED"
    assert len(provider.requests) == answered

    worker = context("ChatAnswerFunction", 180)
    assert deliver_one(url, "ChatAnswersQueue", answers_app.lambda_handler, worker) == {"batchItemFailures": []}

    finished = chat("GET", accepted.headers["Location"])
    assert finished.status == 200 and finished.body["aiResponse"]["content"] == ANSWER  # finished, not cut
    assert len(provider.requests) == answered + 1
    assert window(aws) == (billed(provider), 0) and billed(provider) == (answered + 1) * CALL_TOKENS


def send_in_zone(session_id: str, message: str, zone_claim: str | None) -> Answer:
    """The user's own token: a user may rewrite their ``zoneinfo`` and refresh it at any moment."""
    event = api_event("POST", f"/ai-agent/sessions/{session_id}/messages", {"message": message})
    if zone_claim is not None:
        event["requestContext"]["authorizer"]["claims"]["zoneinfo"] = zone_claim
    return Answer.of(chat_app.lambda_handler(event, context()))


def test_given_a_spent_budget_then_a_zone_the_user_rewrites_gives_no_fresh_day(
    provider: FakeOpenAIServer, aws: Any
) -> None:
    provider.enqueue(*answers(8))  # the budget's: no zone may open more
    session_id = start_session()
    for zone_claim in (None, "Pacific/Kiritimati", "Pacific/Pago_Pago", "Asia/Tokyo", "America/Los_Angeles"):
        for number in range(10):
            answer = send_in_zone(session_id, f"質問{number}", zone_claim)
            if answer.status != 200:
                break
        assert answer.status == 429, (zone_claim, answer.body)
    # No zone opened a fresh day: the provider billed the budget plus one call at most.
    assert 6000 <= billed(provider) <= 6000 + CALL_TOKENS
