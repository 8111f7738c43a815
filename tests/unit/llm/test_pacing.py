"""The pacing seam (``llm.pacing``) on its own, with no provider and no connection: a request's turn
in the rate limit, the account's headers and a 429 that hold the container back, the watchdog's plan
(first token, stall, a pause waited out, the deadline) and its cut (the socket shut down, or the
stream closed), an answer cut when its pace shows it late, and a whole answer's read timed out at
the deadline. The adapter only hands it what arrives (tests/integration/llm/test_streaming_openai.py
and test_rate_pacing.py hold the two together over a real connection).

The watchdog's thread is started only once the fake clock is already past what is due, so it cuts at
once and no test waits for time to pass; a socket pair (no network) stands for the connection."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from lambda_agents.llm import ChatRequest, ChatResponse, Deadline, Pacing
from lambda_agents.llm.errors import AnswerCut, ProviderTimeout, RateLimited, RateShareSpent
from lambda_agents.llm.pacing import Pacer
from lambda_agents.llm.policy import StreamTimeouts
from lambda_agents.llm.rate_budget import RateBudget

from .scripted_model import FakeClock

MESSAGES = [{"role": "user", "content": "?"}]
PARTIAL = ChatResponse("so far", "cut")
HANG_GUARD_S = 10.0  # only bounds a broken watchdog that never cuts; a working one cuts at once


@pytest.fixture
def connection() -> Iterator[tuple[socket.socket, socket.socket]]:
    """The client's end of a connection and the provider's (a local socket pair)."""
    client, provider = socket.socketpair()
    client.settimeout(HANG_GUARD_S)
    yield client, provider
    client.close()
    provider.close()


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


def test_a_429_inside_the_call_holds_every_request_of_the_container_for_its_retry_after() -> None:
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


def test_headers_an_answer_carries_teach_the_budget_a_limit_nobody_set() -> None:
    clock = FakeClock()
    budget = RateBudget.for_account(0, 0, clock=clock)
    pacer = Pacer(rate_budget=budget, clock=clock)

    with pacer.call(request(Pacing()), prompt_tokens=10) as call:
        call.limits_seen({"limit-requests": "500", "remaining-requests": "499", "reset-requests": "120ms"})

    assert budget.share.requests_per_minute == pytest.approx(500)
    with Pacer(clock=clock).call(request(Pacing()), prompt_tokens=10) as call:
        call.limits_seen({"limit-requests": "500", "remaining-requests": "499"})  # no budget: nothing to teach


def test_a_429_without_retry_after_holds_the_container_a_second_and_its_headers_are_learned() -> None:
    clock = FakeClock()
    budget = RateBudget.for_account(0, 0, clock=clock)
    pacer = Pacer(rate_budget=budget, clock=clock)
    limits = {"limit-tokens": "30000", "remaining-tokens": "0", "reset-tokens": "60s"}

    with pytest.raises(RateLimited), pacer.call(request(Pacing()), prompt_tokens=10):
        raise RateLimited("429", retry_after_s=None, limits=limits)

    assert budget.share.tokens_per_minute == pytest.approx(30000)
    assert budget.reserve(1).wait_s >= 1.0  # held for the default second at least, with no tokens left


@pytest.mark.parametrize(
    ("limits", "the_accounts_own"),
    [
        ({"limit-requests": "20", "remaining-requests": "0", "remaining-tokens": "1999000"}, True),
        ({"limit-tokens": "30000", "remaining-tokens": "90", "remaining-requests": "19"}, True),  # 110 needed
        ({"limit-requests": "20", "remaining-requests": "12", "remaining-tokens": "1999000"}, False),
        ({}, False),  # says nothing of the account: the provider's own trouble as far as anyone knows
    ],
)
def test_a_429_whose_headers_show_the_accounts_limit_spent_is_marked_as_the_accounts_own(
    limits: dict[str, str], the_accounts_own: bool
) -> None:
    """A burst of them is the container's pace, which its budget now waits out: not a provider
    failure for the model's breaker to count (``model_chain.counts_against``)."""
    clock = FakeClock()
    pacer = Pacer(rate_budget=RateBudget.for_account(0, 0, clock=clock), clock=clock)

    with pytest.raises(RateLimited) as refused, pacer.call(request(Pacing()), prompt_tokens=10):
        raise RateLimited("429", retry_after_s=3.0, limits=limits)

    assert refused.value.account_limit_reached is the_accounts_own


def test_a_request_that_failed_otherwise_still_counts_in_the_container_share() -> None:
    clock = FakeClock()
    budget = RateBudget.for_account(1, 0, clock=clock)
    pacer = Pacer(rate_budget=budget, clock=clock)

    with pytest.raises(ProviderTimeout), pacer.call(request(Pacing()), prompt_tokens=10):
        raise ProviderTimeout("sent, and no answer")  # the account counted it: not given back

    assert budget.reserve(1).wait_s == pytest.approx(60.0)  # one request a minute: the next waits its minute


def test_a_thinking_model_has_its_headers_and_first_token_waited_for_three_times_its_pace() -> None:
    clock = FakeClock()
    pacing = Pacing(expected_first_token_s=20.0)
    with Pacer(StreamTimeouts(first_token_s=30.0), clock=clock).call(request(pacing), prompt_tokens=10) as call:
        watch = call.stream()

    assert (watch.limits.first_token_s, watch.header_read_s) == (60.0, 60.0)
    assert watch.next_cut() == (clock.now + 60.0, "first_token")


def test_the_watchdog_plans_the_first_token_then_the_stall_then_the_deadline() -> None:
    clock = FakeClock()
    started = clock.now
    pacing = Pacing(answer_by=Deadline.after(40.0, clock))
    with Pacer(StreamTimeouts(first_token_s=30.0, stall_s=15.0), clock=clock).call(request(pacing), 10) as call:
        watch = call.stream()
        before_any_token = watch.next_cut()
        clock.now += 2.0
        watch.arrived(False, 0)  # the role chunk carries no token: the first token's limit still counts
        after_the_role = watch.next_cut()
        clock.now += 1.0
        watch.arrived(True, 1)
        after_a_token = watch.next_cut()
        clock.now += 30.0
        watch.arrived(True, 2)
        near_the_deadline = watch.next_cut()

    assert before_any_token == after_the_role == (started + 30.0, "first_token")
    assert after_a_token == (started + 3.0 + 15.0, "stall")
    assert near_the_deadline == (started + 40.0, "deadline")  # the stall would come after it


def test_a_started_answer_pause_is_waited_out_while_another_whole_attempt_still_fits() -> None:
    clock = FakeClock()
    started = clock.now
    timeouts = StreamTimeouts(stall_s=15.0)
    with_time = Pacing(answer_by=Deadline.after(120.0, clock), planned_s=20.0)
    with Pacer(timeouts, clock=clock).call(request(with_time), prompt_tokens=10) as call:
        worker = call.stream()
        clock.now += 1.0
        worker.arrived(True, 1)
    with Pacer(timeouts, clock=clock).call(request(Pacing(answer_by=Deadline.after(25.0, clock))), 10) as call:
        no_plan = call.stream()
        no_plan.arrived(True, 1)

    assert worker.next_cut() == (started + 120.0 - 20.0 - 15.0, "stall")  # a retry's whole attempt and its wait left
    assert no_plan.next_cut() == (clock.now + 15.0, "stall")  # nothing planned: the stall limit


def test_a_first_token_too_late_for_the_planned_answer_is_given_up_on_for_a_caller_that_asked() -> None:
    clock = FakeClock()
    started = clock.now
    planned = Pacing(
        answer_by=Deadline.after(20.0, clock), planned_tokens=600, planned_tokens_per_s=60.0, cut_when_late=True
    )
    with Pacer(StreamTimeouts(first_token_s=30.0), clock=clock).call(request(planned, 800), 10) as call:
        watch = call.stream()
    without_asking = Pacing(answer_by=Deadline.after(20.0, clock), planned_tokens=600, planned_tokens_per_s=60.0)
    with Pacer(StreamTimeouts(first_token_s=30.0), clock=clock).call(request(without_asking, 800), 10) as call:
        patient = call.stream()

    # 600 tokens at 1.5 x 60 tok/s take 6.7 s: a first token later than 13.3 s in cannot make 20 s
    when, why = watch.next_cut()
    assert (when, why) == (pytest.approx(started + 20.0 - 600 / 90.0), "first_token_late")
    assert patient.next_cut() == (started + 20.0, "deadline")


def test_no_first_token_in_time_shuts_the_connection_down_and_is_a_timeout(
    connection: tuple[socket.socket, socket.socket],
) -> None:
    client, _provider = connection
    clock = FakeClock()
    closed = threading.Event()
    with Pacer(StreamTimeouts(first_token_s=30.0), clock=clock).call(request(Pacing()), prompt_tokens=10) as call:
        watch = call.stream()
        clock.now += 30.0
        watch.start(client, closed.set)
        read = client.recv(1)  # the reader blocked in recv wakes: the watchdog shut the socket down
        watch.stop()
        cut = watch.cut(PARTIAL)

    assert read == b""
    assert client.fileno() != -1 and not closed.is_set()  # shut down, not closed: the FIN goes out at once
    assert isinstance(cut, ProviderTimeout) and not isinstance(cut, AnswerCut)  # retried, not the deadline
    assert str(cut) == "no first token within 30 s" and cut.partial is PARTIAL


def test_a_stall_after_the_first_token_closes_a_stream_with_no_socket_at_hand() -> None:
    clock = FakeClock()
    closed = threading.Event()
    with Pacer(StreamTimeouts(stall_s=15.0), clock=clock).call(request(Pacing()), prompt_tokens=10) as call:
        watch = call.stream()
        clock.now += 1.0
        watch.arrived(True, 1)
        clock.now += 15.0
        watch.start(None, closed.set)  # another transport: no socket to shut down
        assert closed.wait(HANG_GUARD_S)
        watch.stop()
        cut = watch.cut(PARTIAL)

    assert isinstance(cut, ProviderTimeout) and str(cut) == "the stream stalled for 15.0 s"
    timing = watch.timing()
    assert timing is not None and (timing.first_token_s, timing.total_s) == (1.0, 1.0)


def test_a_late_first_token_the_watchdog_gave_up_on_is_the_deadline_error(
    connection: tuple[socket.socket, socket.socket],
) -> None:
    client, _provider = connection
    clock = FakeClock()
    planned = Pacing(
        answer_by=Deadline.after(20.0, clock), planned_tokens=600, planned_tokens_per_s=60.0, cut_when_late=True
    )
    with Pacer(StreamTimeouts(first_token_s=30.0), clock=clock).call(request(planned, 800), 10) as call:
        watch = call.stream()
        clock.now += 14.0
        watch.start(client, None)
        assert client.recv(1) == b""
        watch.stop()
        cut = watch.cut(PARTIAL)

    assert isinstance(cut, AnswerCut)  # the caller has a better place for the answer: not retried here
    assert "no first token while the planned 600-token answer could still be done" in str(cut)


def test_a_stream_that_ended_for_another_reason_is_not_the_pacing_s_to_word() -> None:
    clock = FakeClock()
    pacing = Pacing(answer_by=Deadline.after(60.0, clock))
    with Pacer(StreamTimeouts(first_token_s=30.0), clock=clock).call(request(pacing), prompt_tokens=10) as call:
        watch = call.stream()
        watch.arrived(True, 1)
        clock.now += 2.0
        watch.stop()

    assert watch.cut(PARTIAL) is None  # the provider dropped it: the adapter translates its error
    assert watch.cut(PARTIAL, timed_out_before_start=True) is None  # the headers' 30 s ran out, not the 60 s


def test_a_whole_answer_says_only_how_long_it_took() -> None:
    clock = FakeClock()
    with Pacer(clock=clock).call(request(Pacing()), prompt_tokens=10) as call:
        watch = call.whole()
        clock.now += 7.5

    timing = watch.timing()
    assert (timing.first_token_s, timing.total_s, timing.streamed) == (0.0, 7.5, False)
