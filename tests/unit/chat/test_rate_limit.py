"""Class: the per-user chat limit holds in ANY window, and counts only accepted messages.

A fixed window let 40 messages through in 19 s across a boundary (limit 20 a minute) and counted
requests that then ended in a 409. The property below drives the limiter with any arrival times
and any failures after it (a concurrent change, throttling), and checks the accepted messages
against the definition itself: never more than ``limit`` in a span of ``window`` seconds, and a
refusal only when ``limit`` accepted messages lie in the window before it."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lambda_agents.chat.answering import ProcessMessageInput
from lambda_agents.chat.rate_limit import decide, without
from lambda_agents.chat.records import SessionContext, SessionRecord
from lambda_agents.chat.store import UserMessage
from lambda_agents.spending import DailyBudget, RateLimitExceeded, UserLimits
from lambda_agents.storage.chat import ConcurrentUpdate

from tests.support.branches import Branches
from tests.support.memory_chat import InMemoryChatStore


@dataclass
class LogLimiter:
    """The DynamoDB limiter's logic on an in-memory log (the adapter only adds the conditional write)."""

    limit: int
    window_s: int
    now_ms: int = 0
    log: dict[str, tuple[int, ...]] = field(default_factory=dict)
    taken: dict[str, int] = field(default_factory=dict)

    def acquire(self, user_id: str) -> float | None:
        decision = decide(self.log.get(user_id, ()), self.now_ms, self.limit, self.window_s)
        if not decision.accepted:
            return decision.wait_s
        self.log[user_id] = decision.times
        self.taken[user_id] = self.now_ms
        return None

    def release(self, user_id: str) -> None:
        self.log[user_id] = without(self.log.get(user_id, ()), self.taken.pop(user_id))


def in_any_window(accepted: list[int], window_ms: int) -> int:
    return max((sum(1 for t in accepted if start <= t < start + window_ms) for start in accepted), default=0)


def test_property_never_more_than_the_limit_in_any_window_and_refused_only_when_full() -> None:
    reached = Branches()

    @settings(max_examples=300, deadline=None)
    @given(
        st.integers(min_value=1, max_value=6),
        st.integers(min_value=1, max_value=30),
        st.lists(st.tuples(st.integers(min_value=0, max_value=20_000), st.booleans()), max_size=60),
    )
    def example(limit: int, window_s: int, arrivals: list[tuple[int, bool]]) -> None:
        limiter = LogLimiter(limit, window_s)
        accepted: list[int] = []
        at = 0
        for gap_ms, fails_after in arrivals:
            at += gap_ms
            limiter.now_ms = at
            recent = [t for t in accepted if t > at - window_s * 1000]
            wait = limiter.acquire("u")
            if wait is None:
                if fails_after:
                    reached.add("released")
                    limiter.release("u")  # e.g. a 409 while storing the message: not accepted
                else:
                    reached.add("accepted")
                    accepted.append(at)
            else:
                reached.add("refused")
                assert len(recent) >= limit, "refused although the window had room"
                assert wait > 0
        assert in_any_window(accepted, window_s * 1000) <= limit

    example()
    reached.assert_all("accepted", "released", "refused")


def test_given_20_a_minute_then_40_messages_across_a_minute_boundary_in_19_s_let_only_20_through() -> None:
    limiter = LogLimiter(20, 60)
    passed = 0
    for i in range(40):
        limiter.now_ms = 50_000 + i * 19_000 // 40  # 50.0 s .. 68.5 s: across the 60 s boundary
        passed += limiter.acquire("u") is None
    assert passed == 20


class FlakyStore(InMemoryChatStore):
    def __init__(self) -> None:
        super().__init__()
        self.fail_next = False

    def append_user_message(self, session: SessionRecord, sent: UserMessage) -> int:
        if self.fail_next:
            self.fail_next = False
            raise ConcurrentUpdate("changed")
        return super().append_user_message(session, sent)


def test_given_a_message_that_ends_in_a_409_then_it_does_not_count_against_the_limit() -> None:
    from .test_use_case import Harness, answer, reply

    h = Harness(reply(answer()))
    flaky = FlakyStore()
    h.use_case.answering.store = flaky
    h.use_case.limits = UserLimits(DailyBudget(None, 0), LogLimiter(1, 60, now_ms=1))
    session = h.use_case.start_session("u1", SessionContext())
    flaky.fail_next = True
    with pytest.raises(ConcurrentUpdate):
        h.use_case.execute(ProcessMessageInput(session.session_id, "u1", "一つ目"))
    h.use_case.execute(ProcessMessageInput(session.session_id, "u1", "一つ目"))  # the retry is accepted
    with pytest.raises(RateLimitExceeded):
        h.use_case.execute(ProcessMessageInput(session.session_id, "u1", "二つ目"))


@pytest.mark.parametrize(("wait_s", "seconds"), [(40.2, 41), (40.0, 40), (0.3, 1), (59.999, 60)])
def test_a_429_says_the_same_wait_in_its_retry_after_and_in_its_message(wait_s: float, seconds: int) -> None:
    """A client reads one or the other: both round the wait up, so neither asks too early."""
    refused = RateLimitExceeded(wait_s)
    assert refused.headers == {"Retry-After": str(seconds)}
    assert str(refused) == f"too many messages; retry in {seconds} s"
