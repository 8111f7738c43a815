"""The ChatTable adapter on moto: a foreign session, the latest draft, and the sliding-window rate
limit. Seq numbering under a concurrent turn is in the store contract (test_chat_store_contract.py),
which runs it on this adapter and on the in-memory store alike."""

from __future__ import annotations

from typing import Any

import pytest
from lambda_agents.chat.audit import TurnAudit
from lambda_agents.chat.records import DraftRecord, MessageKind, SessionContext, SessionRecord, StoredMessage
from lambda_agents.chat.store import UserMessage
from lambda_agents.storage.chat import DynamoChatStore
from lambda_agents.storage.chat_rate_limit import DynamoRateLimiter

pytestmark = pytest.mark.integration


def audit(seq: int) -> TurnAudit:
    return TurnAudit("s1", seq, "answer", None, None, 0, 5, "stop", None, None, 1, 1, None, "m", None, 0)


def answer(seq: int) -> StoredMessage:
    return StoredMessage(seq, "assistant", f"a{seq}", "t", MessageKind.ANSWER, reply_to=seq - 1)


def test_given_an_unknown_or_foreign_session_then_appending_fails(aws: Any) -> None:
    from lambda_agents.storage.chat import ConcurrentUpdate

    store = DynamoChatStore("ChatTable")
    store.create_session(SessionRecord("s1", "owner", SessionContext(), "t"), 0)
    with pytest.raises(ConcurrentUpdate):
        store.append_user_message(SessionRecord("s1", "intruder", SessionContext(), "t"), UserMessage("x", "t", 0))
    assert store.recent_messages("s1", 10) == []


def test_the_latest_draft_is_the_highest_seq(aws: Any) -> None:
    store = DynamoChatStore("ChatTable")
    store.create_session(SessionRecord("s1", "u1", SessionContext(), "t"), 0)
    assert store.latest_draft("s1") is None
    for _ in range(5):  # the user's messages 1, 3, 5, 7, 9 that the answers reply to
        session = store.get_session("s1")
        assert session is not None
        store.append_user_message(session, UserMessage("質問", "t", 0))
    for seq in (2, 10, 6):
        store.append_assistant_turn("s1", answer(seq), DraftRecord("s1", seq, {"n": seq}, "t"), audit(seq), 0)
    latest = store.latest_draft("s1")
    assert latest is not None and (latest.seq, latest.payload) == (10, {"n": 10})


def test_the_rate_limit_is_a_sliding_window_per_user(aws: Any) -> None:
    now = [1_000_000.0]
    limiter = DynamoRateLimiter("ChatTable", limit=2, window_s=60, clock=lambda: now[0])
    assert [limiter.acquire("u1"), limiter.acquire("u1")] == [None, None]
    assert limiter.acquire("u1") == pytest.approx(60)  # the oldest leaves the window in 60 s
    assert limiter.acquire("u2") is None
    now[0] += 59
    assert limiter.acquire("u1") == pytest.approx(1)  # no fixed boundary resets the count
    now[0] += 1
    assert limiter.acquire("u1") is None


def test_a_released_place_is_given_back(aws: Any) -> None:
    limiter = DynamoRateLimiter("ChatTable", limit=1, window_s=60, clock=lambda: 1_000_000.0)
    assert limiter.acquire("u1") is None
    limiter.release("u1")
    assert limiter.acquire("u1") is None
    assert limiter.acquire("u1") is not None


def test_given_20_a_minute_then_40_messages_across_a_minute_boundary_in_19_s_let_only_20_through(aws: Any) -> None:
    now = [0.0]
    limiter = DynamoRateLimiter("ChatTable", limit=20, window_s=60, clock=lambda: now[0])
    passed = 0
    for i in range(40):
        now[0] = 60 * 16_667 + 50 + i * 19 / 40  # 50.0 s .. 68.5 s past a whole minute: across its end
        passed += limiter.acquire("u1") is None
    assert passed == 20


def test_two_limiters_racing_for_the_last_place_never_both_take_it(aws: Any) -> None:
    # Two containers: each reads the log with one place left; the second write finds the version changed.
    first = DynamoRateLimiter("ChatTable", limit=2, window_s=60, clock=lambda: 1_000_000.0)
    second = DynamoRateLimiter("ChatTable", limit=2, window_s=60, clock=lambda: 1_000_000.5)
    assert first.acquire("u1") is None
    stale = second._read("u1")
    assert first.acquire("u1") is None  # takes the last place
    assert second._write("u1", (*stale[0], 1_000_000_500), stale[1], 1_000_000_500) is False
    assert second.acquire("u1") is not None


def test_given_a_session_marked_for_deletion_then_a_turn_in_flight_can_store_neither_message(aws: Any) -> None:
    from lambda_agents.storage.chat import ConcurrentUpdate
    from lambda_agents.storage.dynamodb import ConditionFailed

    store = DynamoChatStore("ChatTable")
    session = SessionRecord("s1", "u1", SessionContext(), "t")
    store.create_session(session, 0)
    read_before = store.get_session("s1")
    assert read_before is not None

    assert store.mark_deleting("s1", "someone-else", "t2") is None  # not theirs: nothing marked
    assert store.get_session("s1") is not None
    assert store.mark_deleting("s1", "u1", "t2") is not None

    assert store.get_session("s1") is None
    with pytest.raises(ConcurrentUpdate):
        store.append_user_message(read_before, UserMessage("sent while deleting", "t3", 0))
    with pytest.raises(ConditionFailed):
        store.append_assistant_turn("s1", answer(2), None, audit(2), 0)
    assert store.session_contents("s1").keys == []
