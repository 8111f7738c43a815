"""Spec: with the account's rate limit known, a container paces its requests to its share of it
before sending them, through the real openai client against the fake server's limit (counted as
OpenAI counts it: one request, prompt + max_tokens on arrival). A burst past the limit leaves in
turn and is never refused; a request whose turn comes after its answer could finish is not sent
and says when to come back; a 429 that arrives anyway holds the container's later requests back.

Time is a ``JumpingClock`` that the container's rate budget and the server's limit share: a request
waiting for its turn moves the clock to it instead of waiting, and arrives at the server at that
moment. The limits keep their real minute and the tests take no real time for it, and what they
assert is the turns the pacing decides: a busy machine can neither send a request later than its
turn nor let the server's bucket refill while a burst is on its way.
"""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest
from lambda_agents.llm import ChatRequest, Deadline, Pacing
from lambda_agents.llm.errors import RateLimited, RateShareSpent
from lambda_agents.llm.openai_model import OpenAIChatModel, OpenAIModelSettings
from lambda_agents.llm.rate_budget import RateBudget
from lambda_agents.llm.speeds import SpeedEstimate

from devtools.fake_openai import FakeOpenAIServer, JumpingClock, RateLimit, Reply, prompt_tokens_of

pytestmark = pytest.mark.integration

LIMIT = RateLimit(requests_per_minute=1_000, tokens_per_minute=10_000)
MESSAGES = [{"role": "user", "content": "Plan my day"}]
MAX_TOKENS = 4_000  # two such requests fit in the account's minute, a third waits for the refill
SHARE = 0.8  # the template's default part of the account
SHARE_PER_S = SHARE * LIMIT.tokens_per_minute / 60.0  # what the container's share refills a second


@pytest.fixture
def clock() -> JumpingClock:
    return JumpingClock()


@pytest.fixture
def server(clock: JumpingClock) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(rate_limit=LIMIT, rate_clock=clock) as running:
        yield running


def budget(clock: JumpingClock, share_of_account: float, *, known: bool = True) -> RateBudget:
    """``share_of_account`` of the server's limits on ``clock`` (not ``known``: to be learned)."""
    requests, tokens = (LIMIT.requests_per_minute, LIMIT.tokens_per_minute) if known else (0, 0)
    return RateBudget.for_account(requests, tokens, share=share_of_account, clock=clock, wait_on=clock.wait_on)


def model_for(server: FakeOpenAIServer, rate_budget: RateBudget | None) -> OpenAIChatModel:
    """The real client, paced by ``rate_budget`` (None: not paced)."""
    return OpenAIChatModel(
        OpenAIModelSettings(
            api_key="k",
            model="gpt-4o",
            base_url=server.base_url,
            speed_prior=SpeedEstimate(first_token_s=0.01, tokens_per_s=100_000.0),
        ),
        rate_budget=rate_budget,
    )


def request(answer_by: Deadline | None = None, planned_s: float = 0.0) -> ChatRequest:
    return ChatRequest(
        messages=MESSAGES,
        max_tokens=MAX_TOKENS,
        purpose="test.pacing",
        pacing=Pacing(answer_by=answer_by, planned_s=planned_s),
    )


COST = prompt_tokens_of({"messages": MESSAGES}) + MAX_TOKENS  # what the account counts for one request


def refused(server: FakeOpenAIServer) -> int:
    return [record.ended for record in server.billing].count("rate_limited")


def burst(model: OpenAIChatModel, clock: JumpingClock, calls: int) -> list[str]:
    """``calls`` requests at once, each in a thread of its own with a worker's five minutes (the
    last turns come after the minute a request without a deadline may wait); the clock moves only
    while all of them wait."""

    def one() -> str:
        try:
            model.complete(request(answer_by=Deadline.after(300.0, clock)))
        except RateLimited:
            return "429"
        return "ok"

    return clock.run_together([one] * calls)


def test_a_burst_past_the_limit_leaves_in_turn_and_the_provider_refuses_none(
    server: FakeOpenAIServer, clock: JumpingClock
) -> None:
    server.enqueue(*(Reply(content="A plan.") for _ in range(6)))
    started = clock()

    outcomes = burst(model_for(server, budget(clock, SHARE)), clock, 6)

    assert outcomes == ["ok"] * 6
    assert refused(server) == 0
    # The share's minute (8,000 tokens) sent the first ones at once; the last left when the share
    # had refilled for the rest, about 1.5 minutes in.
    assert clock() - started == pytest.approx((6 * COST - SHARE * LIMIT.tokens_per_minute) / SHARE_PER_S, rel=0.01)


def test_without_the_limit_known_the_same_burst_is_refused_by_the_provider(
    server: FakeOpenAIServer, clock: JumpingClock
) -> None:
    """The control: the same burst sent at once; the provider refuses what its minute cannot hold."""
    server.enqueue(*(Reply(content="A plan.") for _ in range(2)))
    outcomes = burst(model_for(server, None), clock, 6)
    assert sorted(outcomes) == ["429"] * 4 + ["ok"] * 2
    assert refused(server) == 4
    assert clock.waits == []  # nothing was paced


def test_a_limit_nobody_set_is_learned_from_the_first_answers_headers_and_the_burst_after_it_is_not_refused(
    server: FakeOpenAIServer, clock: JumpingClock
) -> None:
    """The deployment was not told the account's limit (0): the first answer's x-ratelimit headers
    teach it, and the same burst the control above sends unpaced now leaves in turn."""
    model = model_for(server, budget(clock, SHARE, known=False))
    server.enqueue(*(Reply(content="A plan.") for _ in range(7)))
    model.complete(ChatRequest(messages=MESSAGES, max_tokens=1, purpose="test.first"))  # unpaced: nothing known
    assert clock.waits == []

    assert burst(model, clock, 6) == ["ok"] * 6
    assert refused(server) == 0
    assert clock.waits  # the burst waited its turns
    assert model.rate_budget is not None
    assert model.rate_budget.share.tokens_per_minute == pytest.approx(SHARE * LIMIT.tokens_per_minute, rel=0.05)
    server.assert_script_consumed()


def test_a_request_whose_turn_comes_after_its_answer_could_finish_is_not_sent(
    server: FakeOpenAIServer, clock: JumpingClock
) -> None:
    model = model_for(server, budget(clock, SHARE))
    server.enqueue(Reply(content="A plan."), Reply(content="A plan."))
    model.complete(request())
    model.complete(request())  # the share's minute is spent: the next request's turn is ~30 s away
    sent = len(server.requests)
    turn_s = COST / SHARE_PER_S

    with pytest.raises(RateShareSpent) as spent:
        model.complete(request(answer_by=Deadline.after(30.0, clock), planned_s=20.0))

    assert len(server.requests) == sent  # nothing reached the provider
    assert spent.value.kind == "rate_limit" and not spent.value.retryable
    assert spent.value.retry_after_s == pytest.approx(turn_s, rel=0.01)
    assert "has room for it in" in str(spent.value) and "10.0 s could be waited" in str(spent.value)
    # Its place was given back: a request that can wait takes the same turn, not a later one.
    server.enqueue(Reply(content="A plan."))
    asked_at = clock()
    model.complete(request(answer_by=Deadline.after(300.0, clock), planned_s=20.0))
    assert clock() - asked_at == pytest.approx(turn_s, rel=0.01)
    assert refused(server) == 0


def test_a_429_that_arrives_anyway_holds_the_containers_next_requests_for_its_retry_after(
    server: FakeOpenAIServer, clock: JumpingClock
) -> None:
    """A share set too high (another function spends the same account): the first refusal's
    retry-after holds back every later request of the container, which is then not refused."""
    model = model_for(server, budget(clock, 3.0))
    server.enqueue(*(Reply(content="A plan.") for _ in range(3)))
    for _ in range(2):
        model.complete(request())
    with pytest.raises(RateLimited) as first:
        model.complete(request())
    retry_after = first.value.retry_after_s
    assert retry_after is not None and retry_after > 1.0 and not isinstance(first.value, RateShareSpent)
    refused_at = clock()

    model.complete(request())  # waits out the retry-after in the container, then is served

    assert refused(server) == 1
    assert clock() - refused_at >= retry_after


def test_an_account_another_caller_spends_slows_the_container_down_before_any_429(
    server: FakeOpenAIServer, clock: JumpingClock
) -> None:
    """Another caller of the same key (another function, another stack) has spent most of the
    account's minute: the first answer's x-ratelimit headers say so, and the container's later
    requests wait for the refill instead of being refused."""
    other = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
    other.chat.completions.create(model="gpt-4o", messages=MESSAGES, max_completion_tokens=5_000)  # type: ignore[arg-type]
    left_after_first = LIMIT.tokens_per_minute - (COST + 1_000) - COST  # the other's request and the first
    server.enqueue(*(Reply(content="A plan.") for _ in range(3)))
    model = model_for(server, budget(clock, SHARE))  # it believes 8,000 tokens of the minute are its own

    sent_at = []
    for _ in range(3):
        model.complete(request())
        sent_at.append(clock())  # the server answers at once: the clock moves only while a request waits

    assert refused(server) == 0
    # Its own share would have sent the second at once (~0.2 s); the first answer's headers said
    # the account had 1,000-odd tokens left, and it waited for the refill of the rest of its cost.
    second_waited = (COST - SHARE * left_after_first) / SHARE_PER_S
    assert sent_at[1] - sent_at[0] == pytest.approx(second_waited, rel=0.02) and second_waited > 20.0
    # The second's answer showed the account again, refilled while the second waited, less the
    # second: the third (4,000 tokens) waited, the same way, for what its share of that left short.
    left_after_second = left_after_first + (sent_at[1] - sent_at[0]) * LIMIT.tokens_per_minute / 60.0 - COST
    third_waited = (COST - SHARE * left_after_second) / SHARE_PER_S
    assert sent_at[2] - sent_at[1] == pytest.approx(third_waited, rel=0.02) and third_waited > 20.0
    server.assert_script_consumed()
