"""Spec: the engine at a real model's speed, through the real openai client and the fake server.

Answers stream by default; a stall, a first token that never comes, or a dropped connection is a
timeout or connection failure of that attempt (retried with the same budget, the tokens it was
billed counted); an answer still arriving at the deadline is cut and closed, so the provider stops
generating; the model's pace is learned from its answers, and an attempt that cannot finish before
the deadline at that pace is not sent. The server runs 100x faster than the model it plays
(time_scale 0.01): a minute of the model's time is 0.6 s here.

What a test holds the product to is decided by real time here (a watchdog thread, a socket), so
each one is written to be decided the same way on a busy machine, whose threads can be seconds
late: the product's limits that are not a test's subject are ``ROOMY_S`` (10 s of real time); a
limit that is the subject is a second or more; what it must cut never ends on its own (``NEVER``:
the fake server's pause or first token ends only when the client leaves); and what must arrive
in time arrives long before its limit. The limits' arithmetic itself is held to a hand-moved
clock in tests/unit/llm/test_pacing.py, and how long after its due time a cut hands back is
measured by benchmarks/stream_cut_bench.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from lambda_agents.llm import (
    ChatRequest,
    Deadline,
    DeadlineReached,
    FixedTokenPolicy,
    Pacing,
    ProviderFailed,
    RetryPolicy,
    StructuredOptions,
    complete_with_retries,
    generate_structured,
)
from lambda_agents.llm.openai_model import OpenAIChatModel, OpenAIModelSettings
from lambda_agents.llm.policy import TRANSIENT_KINDS, StreamTimeouts
from lambda_agents.llm.speeds import CONTAINER_SPEEDS, ModelSpeeds, SpeedEstimate
from lambda_agents.llm.types import estimate_tokens
from pydantic import BaseModel, Field

from devtools.fake_openai import GPT_4O, BillingRecord, FakeOpenAIServer, Reply

pytestmark = pytest.mark.integration

SCALE = 0.01
MESSAGES = [{"role": "user", "content": "Write about breathing"}]
ANSWER = "Breathe in slowly through your nose, hold it, and let it go. " * 60
ANSWER_TOKENS = estimate_tokens(ANSWER)  # 915
RETRIES = RetryPolicy(max_attempts=3, backoff_base_s=0.01, retry_on=TRANSIENT_KINDS)
ROOMY_S = 10.0  # real seconds: a limit no pause of a busy machine reaches
NEVER = 86_400.0  # a day of the model's time: ends only when the client leaves


class Summary(BaseModel):
    points: list[str] = Field(min_length=3, max_length=3)


@pytest.fixture(scope="module", autouse=True)
def warm_client() -> None:
    """The openai client's first request in a process imports what it lazily needs (a second on a
    busy machine), which a test's first-token limit would otherwise count."""
    with FakeOpenAIServer() as warming:
        OpenAIChatModel(OpenAIModelSettings(api_key="k", model="gpt-4o", base_url=warming.base_url)).complete(
            ChatRequest(messages=MESSAGES, max_tokens=1, purpose="test.warm_up")
        )


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(time_scale=SCALE) as running:
        yield running
        running.assert_script_consumed()


def model_for(
    server: FakeOpenAIServer,
    *,
    first_token_s: float = ROOMY_S,
    stall_s: float = ROOMY_S,
    stream: bool = True,
    prior: SpeedEstimate | None = None,
) -> OpenAIChatModel:
    """The real client; its timeouts in real seconds (``ROOMY_S`` unless they are the test's
    subject), its prior pace gpt-4o's (60 tokens/s), scaled like the server."""
    return OpenAIChatModel(
        OpenAIModelSettings(
            api_key="k",
            model="gpt-4o",
            base_url=server.base_url,
            timeouts=StreamTimeouts(first_token_s=first_token_s, stall_s=stall_s),
            stream=stream,
            speed_prior=prior or SpeedEstimate(first_token_s=1.2 * SCALE, tokens_per_s=60.0 / SCALE),
        )
    )


def text_request(max_tokens: int = 1200, *, cut_when_late: bool = False) -> ChatRequest:
    return ChatRequest(
        messages=MESSAGES, max_tokens=max_tokens, purpose="test.speed", pacing=Pacing(cut_when_late=cut_when_late)
    )


def billing(server: FakeOpenAIServer, requests: int) -> list[BillingRecord]:
    deadline = time.monotonic() + 5
    while len(server.billing) < requests and time.monotonic() < deadline:
        time.sleep(0.005)
    return sorted(server.billing, key=lambda record: record.request)


def test_answers_stream_by_default_with_the_usage_chunk_and_come_back_whole(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(content=ANSWER, tokens_per_s=60.0))  # 15 s of the model's time
    result = complete_with_retries(model_for(server), text_request())
    assert server.requests[0]["stream"] is True and server.requests[0]["stream_options"] == {"include_usage": True}
    assert result.response.content == ANSWER and result.response.finish_reason == "stop"
    assert result.usage.completion_tokens == ANSWER_TOKENS and not result.usage.estimated
    timing = result.response.timing
    assert timing is not None and timing.streamed and timing.total_s > timing.first_token_s


def test_a_server_that_cannot_stream_gets_a_whole_request(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(content=ANSWER))
    result = complete_with_retries(model_for(server, stream=False), text_request())
    assert "stream" not in server.requests[0]
    assert result.response.content == ANSWER and result.usage.completion_tokens == ANSWER_TOKENS


def test_a_stall_is_a_timeout_retried_with_the_same_budget_and_the_stalled_tokens_are_counted(
    server: FakeOpenAIServer,
) -> None:
    server.enqueue(
        Reply(content=ANSWER, tokens_per_s=600.0, stall_after_tokens=200, stall_s=NEVER),
        Reply(content=ANSWER, tokens_per_s=600.0),
    )
    # The stall comes long before the first token's limit has passed: the stall limit (1 s) cuts it.
    result = complete_with_retries(model_for(server, stall_s=1.0), text_request(), retry_policy=RETRIES)
    assert [a.outcome for a in result.attempts] == ["timeout", "ok"]
    assert [a.max_tokens for a in result.attempts] == [1200, 1200]
    # OpenAI documents nothing of what a closed stream bills: counted on the safe side, the call's max_tokens.
    assert result.attempts[0].usage.completion_tokens == 1200 and result.attempts[0].usage.estimated
    stalled, answered = billing(server, 2)
    assert stalled.ended == "client_closed" and 200 <= stalled.completion_tokens < ANSWER_TOKENS  # this fake stopped
    assert stalled.completion_tokens <= result.attempts[0].usage.completion_tokens
    assert answered.ended == "complete"


def test_a_first_token_that_does_not_come_is_a_timeout(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(content=ANSWER, first_token_s=NEVER), Reply(content=ANSWER, tokens_per_s=600.0))
    result = complete_with_retries(model_for(server, first_token_s=1.0), text_request(), retry_policy=RETRIES)
    assert [a.outcome for a in result.attempts] == ["timeout", "ok"]
    assert "no first token" in (result.attempts[0].error or "")


def test_a_reasoning_models_long_first_token_is_waited_for_when_the_timeout_allows_it(server: FakeOpenAIServer) -> None:
    """A 2 s thought (200 s of the model's time) against a first token's limit of 5 s: waited for,
    though the limit between chunks (1 s) is shorter than the thought."""
    server.enqueue(Reply(content="Thought it through.", first_token_s=200.0))
    result = complete_with_retries(model_for(server, first_token_s=5.0, stall_s=1.0), text_request(100))
    assert [a.outcome for a in result.attempts] == ["ok"]


def test_a_dropped_connection_is_retried_and_what_it_delivered_is_counted(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(content=ANSWER, drop_after_tokens=100), Reply(content=ANSWER))
    result = complete_with_retries(model_for(server), text_request(), retry_policy=RETRIES)
    assert [a.outcome for a in result.attempts] == ["connection", "ok"]
    assert result.attempts[0].usage.completion_tokens >= 100


def test_an_answer_still_arriving_at_the_deadline_is_cut_closed_and_handed_back_as_a_partial(
    server: FakeOpenAIServer,
) -> None:
    # 915 tokens at 0.5 tokens/s of the model's time: 18 s here, against a 6 s deadline. Not 2 s:
    # beside a whole suite and two CPU burners, no chunk at all was read in the 1.7 s the attempt had.
    server.enqueue(Reply(content=ANSWER, first_token_s=0.5, tokens_per_s=0.5))
    prior = SpeedEstimate(first_token_s=0.5 * SCALE, tokens_per_s=100.0 / SCALE)  # planned to fit, slower in fact
    with pytest.raises(DeadlineReached) as cut:
        complete_with_retries(model_for(server, prior=prior), text_request(), deadline=Deadline.after(6.0))
    assert "the deadline cut the answer" in str(cut.value)
    partial = cut.value.partial
    assert partial is not None and partial.content and ANSWER.startswith(partial.content)
    # What had come by the cut (~300 tokens on a quiet machine; a busy one writes fewer) is what the
    # pace is learned from; what is counted is the safe side, the call's max_tokens (docs/cost.md).
    assert partial.arrived_tokens is not None and 0 < partial.arrived_tokens < ANSWER_TOKENS
    (record,) = billing(server, 1)
    assert record.ended == "client_closed" and record.completion_tokens < ANSWER_TOKENS  # generation stopped
    assert record.completion_tokens <= cut.value.usage.completion_tokens


def test_an_answer_whose_pace_shows_it_will_miss_the_deadline_is_cut_when_that_shows_and_teaches_the_pace(
    server: FakeOpenAIServer,
) -> None:
    # Planned at 100 tok/s, written at 1 (100 tokens/s here): 1,200 tokens cannot come before a 4 s
    # deadline, which a tenth of the time (~40 tokens, 0.4 s) shows; the deadline cuts at ~375 tokens.
    server.enqueue(Reply(content=ANSWER, first_token_s=0.5, tokens_per_s=1.0))
    server.enqueue(Reply(content=ANSWER, first_token_s=0.5, tokens_per_s=1.0))
    prior = SpeedEstimate(first_token_s=0.5 * SCALE, tokens_per_s=100.0 / SCALE)
    model = model_for(server, prior=prior)
    speeds, other_container = ModelSpeeds(), ModelSpeeds()
    with pytest.raises(DeadlineReached) as early:
        complete_with_retries(model, text_request(cut_when_late=True), deadline=Deadline.after(4.0), speeds=speeds)
    with pytest.raises(DeadlineReached) as at_deadline:  # the same answer, for a caller that keeps what arrived
        complete_with_retries(model, text_request(), deadline=Deadline.after(4.0), speeds=other_container)
    assert "tok/s" in str(early.value) and "would end" in str(early.value)
    assert "the deadline cut the answer" in str(at_deadline.value)
    cut_early, cut_at_deadline = billing(server, 2)
    assert cut_early.ended == cut_at_deadline.ended == "client_closed"
    # Cut when its pace showed, it cost less than the answer the deadline cut (how much less is a
    # figure of real time: benchmarks/stream_cut_bench.py).
    assert 0 < cut_early.completion_tokens < cut_at_deadline.completion_tokens
    # The cut answer taught its pace: the next plan knows the model is slow, and sends nothing that cannot finish.
    learned = speeds.estimate("gpt-4o")
    assert learned.learned and learned.tokens_per_s < 30.0 / SCALE
    with pytest.raises(DeadlineReached, match="learned"):
        complete_with_retries(model, text_request(cut_when_late=True), deadline=Deadline.after(4.0), speeds=speeds)
    assert len(server.requests) == 2


def test_a_first_token_too_late_for_the_planned_answer_ends_the_wait_before_the_deadline(
    server: FakeOpenAIServer,
) -> None:
    """Planned at 600 tokens/s (real), 1,200 tokens need 2 s of the 2.75 s the attempt has (x1.5 to
    spare: 1.33 s): a provider that has sent nothing at ~1.4 s cannot make it, and a caller with
    somewhere better to go stops waiting then; one without waits until the deadline cuts at 2.75 s."""
    server.enqueue(Reply(content=ANSWER, first_token_s=NEVER))
    server.enqueue(Reply(content=ANSWER, first_token_s=NEVER))
    prior = SpeedEstimate(first_token_s=0.5 * SCALE, tokens_per_s=600.0)
    model = model_for(server, prior=prior)
    with pytest.raises(DeadlineReached) as given_up:
        complete_with_retries(
            model, text_request(cut_when_late=True), deadline=Deadline.after(3.0), speeds=ModelSpeeds()
        )
    with pytest.raises(DeadlineReached) as waited:
        complete_with_retries(model, text_request(), deadline=Deadline.after(3.0), speeds=ModelSpeeds())
    assert "no first token while the planned 1200-token answer" in str(given_up.value)
    assert "the deadline cut the answer after 0 chunk(s)" in str(waited.value)
    assert [record.completion_tokens for record in billing(server, 2)] == [0, 0]


def test_the_pace_is_learned_and_an_attempt_that_cannot_finish_at_it_is_not_sent(server: FakeOpenAIServer) -> None:
    """Written at 5 tokens/s of the model's time (500 here: 1.8 s for the answer), against the prior's
    60 (6,000 here). The pace learned is a measure of real time, which a busy machine can only stretch
    (or, late to read the first token, shorten by that delay): held to "far below the prior"."""
    server.enqueue(Reply(content=ANSWER, first_token_s=0.5, tokens_per_s=5.0))
    model = model_for(server)
    complete_with_retries(model, text_request())
    learned = CONTAINER_SPEEDS.estimate("gpt-4o")
    assert learned.learned and learned.tokens_per_s < 20.0 / SCALE
    # 1,200 tokens: 0.2 s at the prior's pace, which a second fits; ~2.4 s at the learned one.
    with pytest.raises(DeadlineReached) as refused:
        complete_with_retries(model, text_request(), deadline=Deadline.after(1.25))
    assert len(server.requests) == 1 and "(learned)" in str(refused.value)


def test_at_gpt_4o_speed_a_structured_answer_streams_and_validates(server: FakeOpenAIServer) -> None:
    server.set_profile(GPT_4O)
    server.enqueue(Reply(content='{"points": ["inhale", "hold", "exhale"]}'))
    result = generate_structured(
        model_for(server), Summary, MESSAGES, StructuredOptions(token_policy=FixedTokenPolicy(300))
    )
    assert result.value.points == ["inhale", "hold", "exhale"]
    assert result.attempts[0].plan is not None


def test_a_model_known_to_think_long_is_waited_for_past_the_first_token_timeout(server: FakeOpenAIServer) -> None:
    """A reasoning model's pace (4 s to its first token here, as learned or set) gives it three
    times that (12 s), so a 1.5 s thought is not taken for a silent provider by a first-token limit
    of 0.5 s, however late a busy machine delivers it; a model expected at once keeps the 0.5 s,
    which cuts a thought that does not end."""
    thinker = model_for(server, first_token_s=0.5, prior=SpeedEstimate(first_token_s=4.0, tokens_per_s=6000))
    server.enqueue(Reply(content="Thought it through.", first_token_s=150.0))
    answered = complete_with_retries(thinker, text_request(100), retry_policy=RETRIES)
    assert [a.outcome for a in answered.attempts] == ["ok"]

    CONTAINER_SPEEDS.clear()  # another container, which has not seen this model think
    server.enqueue(Reply(content="Thought it through.", first_token_s=NEVER), Reply(content="Quick."))
    quiet = complete_with_retries(model_for(server, first_token_s=0.5), text_request(100), retry_policy=RETRIES)
    assert [a.outcome for a in quiet.attempts] == ["timeout", "ok"]


# The product's 0.25 s deadline slack must stay small against the caller's time, and the minute's
# end (12 s here) far from the stall limit's cut (~4.6 s here), which a loaded machine's watchdog
# may hand back seconds late.
PAUSE_SCALE = 0.2


@pytest.mark.parametrize(
    ("seconds_the_caller_has", "pause_s", "outcome"),
    [
        (180.0, 20.0, "ok"),  # a worker: a 20 s pause is waited out, one call, not paid twice
        # A minute: no room for another attempt after a pause, which the stall limit cuts (one that
        # does not end, so that it cannot end before a busy machine's late cut).
        (60.0, NEVER, "timeout"),
    ],
)
def test_a_pause_in_a_started_answer_is_waited_out_only_while_another_attempt_would_still_fit(
    seconds_the_caller_has: float, pause_s: float, outcome: str
) -> None:
    """A pause half way through the answer, the product's 15 s stall limit, 1,200 tokens planned at
    60 tokens/s (20 s). Waited out while what is left after it still holds another such attempt
    and a stall limit (until ~140 s into the worker's 180 s, 28 s here, against a pause that ends
    at ~28 s, 5.6 s here); otherwise cut when the stall limit passes (~23 s in, long before the minute's end)."""
    with FakeOpenAIServer(time_scale=PAUSE_SCALE) as scaled:
        scaled.enqueue(Reply(content=ANSWER, tokens_per_s=60.0, stall_after_tokens=ANSWER_TOKENS // 2, stall_s=pause_s))
        model = OpenAIChatModel(
            OpenAIModelSettings(
                api_key="k",
                model="gpt-4o",
                base_url=scaled.base_url,
                # The first token is not the subject: ROOMY_S.
                timeouts=StreamTimeouts(first_token_s=ROOMY_S, stall_s=15.0 * PAUSE_SCALE),
                speed_prior=SpeedEstimate(first_token_s=1.2 * PAUSE_SCALE, tokens_per_s=60.0 / PAUSE_SCALE),
            )
        )
        deadline = Deadline.after(seconds_the_caller_has * PAUSE_SCALE)
        once = RetryPolicy(max_attempts=1, retry_on=TRANSIENT_KINDS)
        if outcome == "ok":
            result = complete_with_retries(model, text_request(), retry_policy=once, deadline=deadline)
            assert result.response.content == ANSWER and [a.outcome for a in result.attempts] == ["ok"]
        else:
            with pytest.raises(ProviderFailed) as failed:
                complete_with_retries(model, text_request(), retry_policy=once, deadline=deadline)
            assert [a.outcome for a in failed.value.attempts] == ["timeout"]
            assert "stalled" in (failed.value.attempts[0].error or "")
        assert [record.ended for record in billing(scaled, 1)] == ["complete" if outcome == "ok" else "client_closed"]
