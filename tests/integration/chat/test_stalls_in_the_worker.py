"""A provider's pause in a chat answer, as ChatAnswerFunction meets it: the
request has seconds and keeps the 15 s stall limit; the worker has minutes, so it waits out a
pause that a started answer makes, as long as it still leaves the time for one more attempt,
instead of cutting the stream and paying for the answer again
(docs/engine.md#streaming). A pause longer than that is cut, and the fallback answer then
records the tokens the cut calls were billed for, as the provider bills them.

Through both handlers, moto (DynamoDB, SQS) and the real openai client against the fake server,
which runs 20x faster than the model it plays (time_scale 0.05), with every time of the product
scaled the same way: the 15 s stall limit is 0.75 s here, the worker's 180 s invocation 9 s.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from lambda_agents.llm.types import estimate_tokens

from devtools.fake_openai import FakeOpenAIServer, Reply, Step
from functions.chat_answers import app as answers_app
from tests.support.lambda_invocation import deliver_one

from .chat_api import Answer, chat, chat_app, context, items, send, start_session, use_fake_openai

pytestmark = pytest.mark.integration

SCALE = 0.05
ANSWER = "中途採用の段取りを五つの工程に分けました。" * 64  # ~1,000 tokens of prose
HALF = estimate_tokens(ANSWER) // 2
MESSAGE = "エンジニア1名の中途採用の段取りを作りたいです"
WORKER_TIMEOUT_S = round(180 * SCALE)


class PausingProvider(FakeOpenAIServer):
    """Every answer: the first half at gpt-4o's 60 tokens/s, then ``pause_s`` of the model's time
    without a chunk, then the rest."""

    def __init__(self, pause_s: float) -> None:
        super().__init__(time_scale=SCALE)
        self.pause = Reply(content=ANSWER, tokens_per_s=60.0, stall_after_tokens=HALF, stall_s=pause_s)

    def _next_step(self, body: dict[str, Any]) -> Step | None:
        return self.pause


@pytest.fixture
def worker(aws: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    url = boto3.client("sqs").create_queue(QueueName="ChatAnswersQueue")["QueueUrl"]
    monkeypatch.setenv("CHAT_ANSWERS_QUEUE_URL", url)
    yield url
    answers_app.dependencies.reset()


def provider(monkeypatch: pytest.MonkeyPatch, pause_s: float) -> PausingProvider:
    """The fake provider, and the product's settings in its scaled time (the template's defaults)."""
    server = PausingProvider(pause_s).start()
    use_fake_openai(monkeypatch, server.base_url)
    monkeypatch.setenv("OPENAI_STALL_TIMEOUT_SECONDS", f"{15 * SCALE:g}")
    monkeypatch.setenv(
        "OPENAI_FIRST_TOKEN_TIMEOUT_SECONDS", "5"
    )  # not this test's subject: a loaded machine's slow start
    # Planned at 30 tokens/s (1,200 tokens in 40 s): what the worker keeps for one more attempt.
    monkeypatch.setenv("OPENAI_TOKENS_PER_SECOND", f"{30 / SCALE:g}")
    monkeypatch.setenv("OPENAI_FIRST_TOKEN_SECONDS", f"{1.2 * SCALE:g}")
    chat_app.dependencies.reset()
    answers_app.dependencies.reset()
    return server


def answered_by_the_worker(url: str) -> Answer:
    """A turn handed to the worker (``url``: its queue), the worker's run, and the answer read back."""
    accepted = send(start_session(), MESSAGE, headers={"Prefer": "respond-async"})
    assert accepted.status == 202, accepted.body
    worker_context = context("ChatAnswerFunction", WORKER_TIMEOUT_S)
    assert deliver_one(url, "ChatAnswersQueue", answers_app.lambda_handler, worker_context) == {"batchItemFailures": []}
    return chat("GET", accepted.headers["Location"])


def test_a_20_s_pause_half_way_through_a_1000_token_answer_is_waited_out_by_the_worker(
    aws: Any, worker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = provider(monkeypatch, pause_s=20.0)
    try:
        ai = answered_by_the_worker(worker).body["aiResponse"]
        assert (ai["fallback"], ai["truncated"], ai["content"]) == (False, False, ANSWER)
        assert [record.ended for record in server.billing] == ["complete"]  # one call, not paid twice
    finally:
        server.stop()


def test_a_pause_longer_than_the_worker_can_wait_gives_the_fallback_with_the_tokens_the_cut_calls_were_billed(
    aws: Any, worker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = provider(monkeypatch, pause_s=100.0)
    try:
        answered = answered_by_the_worker(worker)
        assert answered.body["aiResponse"]["fallback"] is True
        billed = sorted(server.billing, key=lambda record: record.request)
        assert billed and all(record.ended == "client_closed" for record in billed)
        usage = answered.body["usage"]
        # Each cut call was billed its prompt and the half it had written (the provider sent no usage).
        assert usage["completionTokens"] == sum(record.completion_tokens for record in billed)
        assert usage["completionTokens"] >= len(billed) * HALF
        assert usage["promptTokens"] == sum(record.prompt_tokens for record in billed)  # counted as the provider does
        (audit,) = [item for item in items(aws, "ChatTable") if str(item["sk"]).startswith("AUDIT#")]
        assert int(audit["completionTokens"]) == usage["completionTokens"]
        # The record read back from the audit item: the cut calls, priced at the model's rates.
        account = usage["account"]
        assert (account["completionTokens"], account["attempts"]) == (usage["completionTokens"], len(billed))
        assert account["costUsd"] == usage["costUsd"] and account["costUsd"] > 0
    finally:
        server.stop()
