"""Spec: with the account's rate limit known, a container paces its requests to its share of it
before sending them, through the real openai client against the fake server's limit (counted as
OpenAI counts it: one request, prompt + max_tokens on arrival). A burst past the limit leaves in
turn and is never refused; a request whose turn comes after its answer could finish is not sent
and says when to come back; a 429 that arrives anyway holds the container's later requests back.
The server runs 100x faster than real (time_scale 0.01: its minute is 0.6 s), and the shares are
scaled the same way; the burst runs 20x faster (a 3 s minute), so that a busy machine's delay between
the client's send and the server's arrival stays small against the 20% of the minute left for it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pytest
from lambda_agents.llm import ChatRequest, Deadline, Pacing, rate_budget
from lambda_agents.llm.errors import RateLimited, RateShareSpent
from lambda_agents.llm.openai_model import OpenAIChatModel, OpenAIModelSettings
from lambda_agents.llm.rate_budget import RateBudget
from lambda_agents.llm.speeds import SpeedEstimate

from devtools.fake_openai import FakeOpenAIServer, RateLimit, Reply

pytestmark = pytest.mark.integration

SCALE = 0.01
BURST_SCALE = 0.05
LIMIT = RateLimit(requests_per_minute=1_000, tokens_per_minute=10_000)
MESSAGES = [{"role": "user", "content": "Plan my day"}]
MAX_TOKENS = 4_000  # two such requests fit in the account's minute, a third waits for the refill


@contextmanager
def warmed_server(monkeypatch: pytest.MonkeyPatch, scale: float) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setattr(rate_budget, "MINUTE_S", 60.0 * scale)
    with FakeOpenAIServer(time_scale=scale, rate_limit=LIMIT) as running:
        # One cheap request first: the client's first use imports and connects lazily (~0.3 s when
        # this file runs alone), long against the scaled minute the pacing is measured in here.
        warm = OpenAIChatModel(OpenAIModelSettings(api_key="k", model="gpt-4o", base_url=running.base_url))
        warm.complete(ChatRequest(messages=MESSAGES, max_tokens=1, purpose="test.warm_up"))
        time.sleep(60.0 * scale)  # the account's minute refills
        running.reset()
        yield running


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    with warmed_server(monkeypatch, SCALE) as running:
        yield running


@pytest.fixture
def burst_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    with warmed_server(monkeypatch, BURST_SCALE) as running:
        yield running


def model_for(server: FakeOpenAIServer, share_of_account: float | None) -> OpenAIChatModel:
    """The real client; its budget is ``share_of_account`` of the server's limits."""
    budget = None
    if share_of_account is not None:
        budget = RateBudget.for_account(LIMIT.requests_per_minute, LIMIT.tokens_per_minute, share=share_of_account)
    return OpenAIChatModel(
        OpenAIModelSettings(
            api_key="k",
            model="gpt-4o",
            base_url=server.base_url,
            speed_prior=SpeedEstimate(first_token_s=0.01, tokens_per_s=100_000.0),
        ),
        rate_budget=budget,
    )


def request(answer_by: Deadline | None = None, planned_s: float = 0.0) -> ChatRequest:
    return ChatRequest(
        messages=MESSAGES,
        max_tokens=MAX_TOKENS,
        purpose="test.pacing",
        pacing=Pacing(answer_by=answer_by, planned_s=planned_s),
    )


def refused(server: FakeOpenAIServer) -> int:
    return [record.ended for record in server.billing].count("rate_limited")


def burst(model: OpenAIChatModel, calls: int) -> list[str]:
    def one(_: int) -> str:
        try:
            model.complete(request())
        except RateLimited:
            return "429"
        return "ok"

    with ThreadPoolExecutor(calls) as pool:
        return list(pool.map(one, range(calls)))


def test_a_burst_past_the_limit_leaves_in_turn_and_the_provider_refuses_none(burst_server: FakeOpenAIServer) -> None:
    burst_server.enqueue(*(Reply(content="A plan.") for _ in range(6)))
    started = time.monotonic()
    # 80% of the account, the template's default part: what the request's way to the provider takes
    # (a connection's first ~0.1 s, a busy machine's scheduling) is inside the other 20%.
    outcomes = burst(model_for(burst_server, share_of_account=0.8), 6)
    assert outcomes == ["ok"] * 6
    assert refused(burst_server) == 0
    # Six requests of ~4,000 tokens against 10,000 a (3 s) minute: the last ones waited their turn.
    assert time.monotonic() - started >= 4 * 4_000 / 10_000 * 60.0 * BURST_SCALE


def test_without_the_limit_known_the_same_burst_is_refused_by_the_provider() -> None:
    """The control: the same burst sent at once; the provider refuses what its minute cannot hold.
    Its server keeps a real minute: nothing is paced here, and at the scaled minute a burst that a busy
    machine spreads over a quarter of a second would find the bucket refilled."""
    with FakeOpenAIServer(time_scale=1.0, rate_limit=LIMIT) as real_minute:
        real_minute.enqueue(*(Reply(content="A plan.") for _ in range(2)))
        outcomes = burst(model_for(real_minute, share_of_account=None), 6)
        assert sorted(outcomes) == ["429"] * 4 + ["ok"] * 2
        assert refused(real_minute) == 4


def test_a_limit_nobody_set_is_learned_from_the_first_answers_headers_and_the_burst_after_it_is_not_refused(
    burst_server: FakeOpenAIServer,
) -> None:
    """The deployment was not told the account's limit (0): the first answer's x-ratelimit headers
    teach it, and the same burst the control below sends unpaced now leaves in turn."""
    model = model_for(burst_server, share_of_account=None)
    model.rate_budget = RateBudget.for_account(0, 0, share=0.8)
    burst_server.enqueue(*(Reply(content="A plan.") for _ in range(7)))
    model.complete(ChatRequest(messages=MESSAGES, max_tokens=1, purpose="test.first"))  # unpaced: nothing known

    assert burst(model, 6) == ["ok"] * 6
    assert refused(burst_server) == 0
    assert model.rate_budget is not None
    assert model.rate_budget.share.tokens_per_minute == pytest.approx(0.8 * LIMIT.tokens_per_minute, rel=0.05)
    burst_server.assert_script_consumed()


def test_a_request_whose_turn_comes_after_its_answer_could_finish_is_not_sent(server: FakeOpenAIServer) -> None:
    model = model_for(server, share_of_account=0.8)
    server.enqueue(Reply(content="A plan."), Reply(content="A plan."))
    model.complete(request())
    model.complete(request())  # the share's minute is spent: the next request's turn is ~0.3 s away
    sent = len(server.requests)

    with pytest.raises(RateShareSpent) as spent:
        model.complete(request(answer_by=Deadline.after(0.3), planned_s=0.2))

    assert len(server.requests) == sent  # nothing reached the provider
    assert spent.value.kind == "rate_limit" and not spent.value.retryable
    assert spent.value.retry_after_s is not None and 0.1 < spent.value.retry_after_s < 0.6
    assert "has room for it in" in str(spent.value)
    # Its place was given back: a request that can wait takes the same turn, not a later one.
    server.enqueue(Reply(content="A plan."))
    model.complete(request(answer_by=Deadline.after(5.0), planned_s=0.2))
    assert refused(server) == 0


def test_a_429_that_arrives_anyway_holds_the_containers_next_requests_for_its_retry_after(
    server: FakeOpenAIServer,
) -> None:
    """A share set too high (another function spends the same account): the first refusal's
    retry-after holds back every later request of the container, which is then not refused."""
    model = model_for(server, share_of_account=3.0)
    server.enqueue(*(Reply(content="A plan.") for _ in range(3)))
    for _ in range(2):
        model.complete(request())
    with pytest.raises(RateLimited) as first:
        model.complete(request())
    assert first.value.retry_after_s is not None and not isinstance(first.value, RateShareSpent)

    model.complete(request())  # waits out the retry-after in the container, then is served

    assert refused(server) == 1


def test_an_account_another_caller_spends_slows_the_container_down_before_any_429(server: FakeOpenAIServer) -> None:
    """Another caller of the same key (another function, another stack) has spent most of the
    account's minute: the first answer's x-ratelimit headers say so, and the container's later
    requests wait for the refill instead of being refused."""
    import openai

    other = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
    other.chat.completions.create(model="gpt-4o", messages=MESSAGES, max_completion_tokens=5_000)  # type: ignore[arg-type]
    server.enqueue(*(Reply(content="A plan.") for _ in range(3)))
    model = model_for(server, share_of_account=0.8)  # it believes 8,000 tokens of the minute are its own

    for _ in range(3):
        model.complete(request())

    assert refused(server) == 0
    started = [record.started_at for record in server.billing[1:]]
    # The third request (4,000 tokens) waited for the refill the headers announced.
    assert started[2] - started[1] >= 0.15 * 60 * SCALE
    server.assert_script_consumed()
