"""A provider's pause in a chat answer, as ChatAnswerFunction meets it: the
request has seconds and keeps the 15 s stall limit; the worker has minutes, so it waits out a
pause that a started answer makes, as long as it still leaves the time for one more attempt,
instead of cutting the stream and paying for the answer again
(docs/engine.md#streaming). A pause longer than that is cut, and the fallback answer then
records the tokens the cut calls were billed for, as the provider bills them.

Through both handlers, moto (DynamoDB, SQS) and the real openai client against the fake server,
which runs faster than the model it plays, with every time of the product scaled the same way
(``devtools.time_scale``): the template's 180 s worker, its 15 s stall limit and the 3 s it keeps
to store the answer. The answer whose pause is waited out runs 10x faster (an 18 s worker): the
answer and its pause take ~4 s, the worker would stop waiting ~12 s in and its deadline is ~17 s
in, so the many seconds a busy machine can add to reading the stream do not change what the worker
decides. The pause the worker cannot wait out runs 20x faster and never ends: only the cut ends it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from lambda_agents.llm.types import estimate_tokens

from devtools.fake_openai import FakeOpenAIServer, Reply, Step
from devtools.time_scale import scale_product, unscale_product
from functions.chat_answers import app as answers_app
from tests.support.lambda_invocation import deliver_one

from .chat_api import Answer, chat, chat_app, context, items, send, start_session, use_fake_openai

pytestmark = pytest.mark.integration

ANSWER = "中途採用の段取りを五つの工程に分けました。" * 64  # ~1,000 tokens of prose
HALF = estimate_tokens(ANSWER) // 2
MESSAGE = "エンジニア1名の中途採用の段取りを作りたいです"
WORKER_TIMEOUT_S = 180  # the template's ChatAnswerFunction
NEVER = 86_400.0  # a pause of a day of the model's time: only the worker's cut ends it


@pytest.fixture(autouse=True)
def product_unscaled_after() -> Iterator[None]:
    yield
    unscale_product()


class PausingProvider(FakeOpenAIServer):
    """Every answer: the first half at gpt-4o's 60 tokens/s, then ``pause_s`` of the model's time
    without a chunk, then the rest."""

    def __init__(self, pause_s: float, scale: float) -> None:
        super().__init__(time_scale=scale)
        self.pause = Reply(content=ANSWER, tokens_per_s=60.0, stall_after_tokens=HALF, stall_s=pause_s)

    def _next_step(self, body: dict[str, Any]) -> Step | None:
        return self.pause


@pytest.fixture
def worker(aws: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    url = boto3.client("sqs").create_queue(QueueName="ChatAnswersQueue")["QueueUrl"]
    monkeypatch.setenv("CHAT_ANSWERS_QUEUE_URL", url)
    yield url
    answers_app.dependencies.reset()


def provider(monkeypatch: pytest.MonkeyPatch, pause_s: float, scale: float) -> PausingProvider:
    """The fake provider, and the product's times and settings at its pace (the template's defaults)."""
    scale_product(scale)
    server = PausingProvider(pause_s, scale).start()
    use_fake_openai(monkeypatch, server.base_url)
    monkeypatch.setenv("OPENAI_STALL_TIMEOUT_SECONDS", f"{15 * scale:g}")
    monkeypatch.setenv(
        "OPENAI_FIRST_TOKEN_TIMEOUT_SECONDS", "5"
    )  # not this test's subject: a loaded machine's slow start
    # Planned at 30 tokens/s (1,200 tokens in 40 s): what the worker keeps for one more attempt.
    monkeypatch.setenv("OPENAI_TOKENS_PER_SECOND", f"{30 / scale:g}")
    monkeypatch.setenv("OPENAI_FIRST_TOKEN_SECONDS", f"{1.2 * scale:g}")
    chat_app.dependencies.reset()
    answers_app.dependencies.reset()
    return server


def hand_over(session: str) -> Answer:
    accepted = send(session, MESSAGE, headers={"Prefer": "respond-async"})
    assert accepted.status == 202, accepted.body
    return accepted


def answer_in_the_worker(url: str, scale: float) -> None:
    worker_context = context("ChatAnswerFunction", round(WORKER_TIMEOUT_S * scale))
    assert deliver_one(url, "ChatAnswersQueue", answers_app.lambda_handler, worker_context) == {"batchItemFailures": []}


def test_a_20_s_pause_half_way_through_a_1000_token_answer_is_waited_out_by_the_worker(
    aws: Any, worker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = provider(monkeypatch, pause_s=20.0, scale=0.1)
    try:
        accepted = hand_over(start_session())

        answer_in_the_worker(worker, 0.1)

        answered = chat("GET", accepted.headers["Location"])
        ai = answered.body["aiResponse"]
        assert (ai["fallback"], ai["truncated"], ai["content"]) == (False, False, ANSWER)
        assert [record.ended for record in server.billing] == ["complete"]  # one call, not paid twice
    finally:
        server.stop()


def test_a_pause_longer_than_the_worker_can_wait_gives_the_fallback_with_the_tokens_the_cut_calls_were_billed(
    aws: Any, worker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = provider(monkeypatch, pause_s=NEVER, scale=0.05)
    try:
        accepted = hand_over(start_session())

        answer_in_the_worker(worker, 0.05)

        answered = chat("GET", accepted.headers["Location"])
        assert answered.body["aiResponse"]["fallback"] is True
        billed = sorted(server.billing, key=lambda record: record.request)
        assert billed and all(record.ended == "client_closed" for record in billed)
        usage = answered.body["usage"]
        # Each cut call sent no usage: counted on the safe side, its max_tokens (docs/cost.md), never less
        # than this fake billed (the half it had written before the client closed the stream).
        assert usage["completionTokens"] == len(billed) * 1200
        assert sum(record.completion_tokens for record in billed) <= usage["completionTokens"]
        assert all(record.completion_tokens >= HALF for record in billed)
        assert usage["promptTokens"] == sum(record.prompt_tokens for record in billed)  # counted as the provider does
        (audit,) = [item for item in items(aws, "ChatTable") if str(item["sk"]).startswith("AUDIT#")]
        assert int(audit["completionTokens"]) == usage["completionTokens"]
        # The record read back from the audit item: the cut calls, priced at the model's rates.
        account = usage["account"]
        assert (account["completionTokens"], account["attempts"]) == (usage["completionTokens"], len(billed))
        assert account["costUsd"] == usage["costUsd"] and account["costUsd"] > 0
    finally:
        server.stop()
