"""The pacing seam (``llm.pacing``) on its own, with no provider and no socket: a request's turn in
the rate limit, a 429 that holds the container back, an answer cut when its pace shows it late, and
a whole answer's read timed out at the deadline. The adapter only hands it what arrives
(tests/integration/llm/test_streaming_openai.py and test_rate_pacing.py hold the two together)."""

from __future__ import annotations

import pytest
from lambda_agents.llm import ChatRequest, ChatResponse, Deadline, Pacing
from lambda_agents.llm.errors import AnswerCut, ProviderTimeout, RateLimited, RateShareSpent
from lambda_agents.llm.pacing import Pacer
from lambda_agents.llm.policy import StreamTimeouts
from lambda_agents.llm.rate_budget import RateBudget

from .scripted_model import FakeClock

MESSAGES = [{"role": "user", "content": "?"}]
PARTIAL = ChatResponse("so far", "cut")


def request(pacing: Pacing, max_tokens: int = 100) -> ChatRequest:
    return ChatRequest(messages=MESSAGES, max_tokens=max_tokens, purpose="test.pacing", pacing=pacing)


def test_a_request_whose_turn_would_not_leave_its_planned_time_is_not_sent() -> None:
    clock = FakeClock()
    pacer = Pacer(rate_budget=RateBudget.for_account(2, 0, clock=clock), clock=clock)
    for _ in range(2):  # the minute's two requests leave at once
        with pacer.call(request(Pacing()), prompt_tokens=10):
            pass
    late = Pacing(answer_by=Deadline.after(20.0, clock), planned_s=5.0)

    with pytest.raises(RateShareSpent) as caught, pacer.call(request(late), prompt_tokens=10):
        raise AssertionError("not sent: the call must not start")

    assert caught.value.retry_after_s == pytest.approx(30.0)  # the third request's turn, half a minute away
    assert "15.0 s could be waited" in str(caught.value)  # 20 s left less the 5 s its answer needs


def test_a_429_inside_the_call_gives_the_request_back_and_holds_the_container() -> None:
    clock = FakeClock()
    budget = RateBudget.for_account(600, 0, clock=clock)
    pacer = Pacer(rate_budget=budget, clock=clock)

    with pytest.raises(RateLimited), pacer.call(request(Pacing()), prompt_tokens=10):
        raise RateLimited("429", retry_after_s=12.0)

    turn = budget.reserve(10)
    assert turn.wait_s == pytest.approx(12.0, abs=0.2)  # every request of the container waits out the 429


def test_an_answer_whose_pace_shows_it_late_is_cut_for_a_caller_that_asked() -> None:
    clock = FakeClock()
    pacing = Pacing(answer_by=Deadline.after(26.0, clock), planned_tokens=1000, cut_when_late=True)
    with Pacer(StreamTimeouts(), clock=clock).call(request(pacing, max_tokens=1200), prompt_tokens=10) as call:
        watch = call.stream()
        clock.now += 1.0
        watch.arrived(True, 1)  # the first token, 1 s in
        clock.now += 4.0
        with pytest.raises(Exception, match="10 tok/s"):  # the adapter reads any early end through ``cut``
            watch.arrived(True, 40)  # 40 tokens in 4 s: 10 tok/s, 960 more cannot be written in 21 s
        cut = watch.cut(PARTIAL)

    assert isinstance(cut, AnswerCut) and cut.partial is PARTIAL
    assert "cut after 2 chunk(s): at 10 tok/s the 1000-token answer" in str(cut)
    timing = watch.timing()
    assert timing is not None and (timing.first_token_s, timing.total_s) == (1.0, 5.0)


def test_the_same_pace_runs_on_for_a_caller_that_did_not_ask() -> None:
    clock = FakeClock()
    pacing = Pacing(answer_by=Deadline.after(26.0, clock), planned_tokens=1000)
    with Pacer(StreamTimeouts(), clock=clock).call(request(pacing, max_tokens=1200), prompt_tokens=10) as call:
        watch = call.stream()
        clock.now += 1.0
        watch.arrived(True, 1)
        clock.now += 4.0
        watch.arrived(True, 40)

    assert watch.cut(PARTIAL) is None  # not the pacing's: whatever ended the stream is the adapter's to say


def test_a_stream_ends_as_the_deadline_cuts_it_and_a_read_timed_out_before_it_began_at_the_deadline() -> None:
    clock = FakeClock()
    pacing = Pacing(answer_by=Deadline.after(3.0, clock))
    with Pacer(StreamTimeouts(first_token_s=30.0), clock=clock).call(request(pacing), prompt_tokens=10) as call:
        watch = call.stream()
        assert watch.header_read_s == 3.0  # the headers wait no longer than the deadline
        before_start = watch.cut(PARTIAL, timed_out_before_start=True)
        clock.now += 3.0
        at_deadline = watch.cut(PARTIAL)

    assert isinstance(before_start, AnswerCut) and "before the answer started" in str(before_start)
    assert isinstance(at_deadline, AnswerCut) and "the deadline cut the answer after 0 chunk(s)" in str(at_deadline)


def test_a_whole_answer_is_read_until_the_deadline_and_a_timeout_there_is_the_deadline() -> None:
    clock = FakeClock()
    with Pacer(clock=clock).call(request(Pacing(answer_by=Deadline.after(8.0, clock))), prompt_tokens=10) as call:
        bounded = call.whole()
    with Pacer(clock=clock).call(request(Pacing()), prompt_tokens=10) as call:
        unbounded = call.whole()

    assert bounded.read_s == 8.0 and isinstance(bounded.cut(ProviderTimeout("read timed out")), AnswerCut)
    assert unbounded.read_s == StreamTimeouts().unbounded_answer_s
    assert unbounded.cut(ProviderTimeout("read timed out")) is None  # no deadline: a timeout is retried
