"""Contract: the in-memory chat storage the unit tests use (``tests.support.memory_chat``) behaves as
the DynamoDB adapters of ``storage.chat`` do on moto (ChatTable built from template.yaml), in what
the chat services rely on:

- the chat store (``DynamoChatStore``: the ChatStore port of ``chat.store``, the SessionStore
  port of ``chat.sessions``, the DraftSource port of ``chat.template_from_session``): a session
  reads back as created, is created once, and is listed to its owner only, newest first, page by
  page; a user's message takes the next free seq and reserves the one after for its answer, and
  is refused for a missing session, another user's or one being deleted; the recent window and
  history pages; an answer is stored with its draft and audit record or not at all, once; pending
  turns; the latest draft; marking, listing and deleting everything under a session;
- the rate limiter (``DynamoRateLimiter``, its clock held still: ``CountingLimiter`` has no
  window to slide): places per user, and what a release gives back.

Every test runs against both."""

from __future__ import annotations

from dataclasses import replace

import pytest
from lambda_agents.chat.audit import TurnAudit
from lambda_agents.chat.records import (
    DraftRecord,
    DraftStatus,
    MessageKind,
    SessionContext,
    SessionRecord,
    StoredMessage,
)
from lambda_agents.chat.sessions import SessionPosition
from lambda_agents.chat.store import AnswerExists, SessionGone, UserMessage
from lambda_agents.storage.chat import ConcurrentUpdate, DynamoChatStore
from lambda_agents.storage.chat_rate_limit import DynamoRateLimiter
from lambda_agents.storage.dynamodb import ConditionFailed

from tests.support.memory_chat import CountingLimiter, InMemoryChatStore

pytestmark = pytest.mark.integration

ChatStore = InMemoryChatStore | DynamoChatStore
Limiter = CountingLimiter | DynamoRateLimiter
LIMIT = 2  # places per user in the limiter contract


@pytest.fixture(params=["memory", "dynamodb"])
def store(request: pytest.FixtureRequest) -> ChatStore:
    if request.param == "memory":
        return InMemoryChatStore()
    request.getfixturevalue("aws")  # moto, with the template's ChatTable
    return DynamoChatStore("ChatTable", sleep=lambda _: None)


@pytest.fixture(params=["memory", "dynamodb"])
def limiter(request: pytest.FixtureRequest) -> Limiter:
    if request.param == "memory":
        return CountingLimiter(limit=LIMIT)
    request.getfixturevalue("aws")
    return DynamoRateLimiter("ChatTable", limit=LIMIT, window_s=60, clock=lambda: 1_000_000.0)


CONTEXT = SessionContext(processType="中途採用", goal="4月入社", region=None)
CREATED = "2026-11-26T00:00:00.000+00:00"


def at(minute: int) -> str:
    return f"2026-11-26T00:{minute:02d}:00.000+00:00"


def session(session_id: str = "s1", user_id: str = "u1", created_at: str = CREATED) -> SessionRecord:
    return SessionRecord(session_id, user_id, CONTEXT, created_at, template_seed=f"seed-{session_id}")


def started(store: ChatStore, session_id: str = "s1", user_id: str = "u1", created_at: str = CREATED) -> SessionRecord:
    """A stored session, as the store reads it back."""
    store.create_session(session(session_id, user_id, created_at), 0)
    stored = store.get_session(session_id)
    assert stored is not None
    return stored


def audit(seq: int, session_id: str = "s1") -> TurnAudit:
    return TurnAudit(
        session_id, seq, "answer", None, None, 1, 850, "stop", "ai_chat_process_template.v1", None,
        1000, 200, 0.0045, "gpt-4o-2024-08-06", "ab" * 32, 2, True,
    )  # fmt: skip


def answer(seq: int, content: str | None = None, created_at: str = CREATED) -> StoredMessage:
    status = DraftStatus(True, "ai_chat_process_template.v1", None, None, step_count=2, missing_information=("期限",))
    return StoredMessage(seq, "assistant", content or f"回答 {seq}", created_at, MessageKind.ANSWER, seq - 1, status)


def draft(seq: int, session_id: str = "s1") -> DraftRecord:
    return DraftRecord(session_id, seq, {"processTemplateDraft": {"name": f"草案 {seq}", "steps": [1.5, seq]}}, CREATED)


def answered_turn(store: ChatStore, current: SessionRecord, text: str, *, with_draft: bool = False) -> int:
    """One turn stored whole: the user's message and its answer; returns the answer's seq."""
    seq = store.append_user_message(current, UserMessage(text, CREATED, 0)) + 1
    store.append_assistant_turn(current.session_id, answer(seq), draft(seq) if with_draft else None, audit(seq), 0)
    return seq


def fresh(store: ChatStore, session_id: str = "s1") -> SessionRecord:
    current = store.get_session(session_id)
    assert current is not None
    return current


# -- sessions ------------------------------------------------------------------------------------


def test_a_session_reads_back_as_created_with_its_owner_and_a_missing_one_reads_as_none(store: ChatStore) -> None:
    store.create_session(replace(session(), message_count=7, updated_at="ignored"), 0)

    # Read by id alone: the services compare the owner with the caller (another user's is a 404).
    assert store.get_session("s1") == replace(session(), message_count=0, updated_at=CREATED)
    assert store.get_session("missing") is None
    assert store.recent_messages("missing", 10) == [] and store.latest_draft("missing") is None


def test_a_second_session_with_the_same_id_is_refused_and_the_first_is_kept(store: ChatStore) -> None:
    first = started(store)

    with pytest.raises(ConditionFailed):
        store.create_session(session("s1", "someone-else"), 0)
    assert store.get_session("s1") == first


def test_a_users_sessions_are_listed_newest_first_page_by_page_and_never_another_users(store: ChatStore) -> None:
    old, mid, new = (started(store, f"s-{name}", "u1", at(minute)) for minute, name in enumerate(("old", "mid", "new")))
    started(store, "s-other", "u2", at(9))

    first = store.session_page("u1", 2, None)
    assert first.sessions == [new, mid] and first.last == SessionPosition(mid.created_at, "s-mid")
    second = store.session_page("u1", 2, first.last)
    assert second.sessions == [old] and second.last is None
    whole = store.session_page("u1", 3, None)
    assert whole.sessions == [new, mid, old] and whole.last is None
    assert store.session_page("nobody", 2, None).sessions == []


def test_a_listed_session_shows_when_its_last_message_or_answer_was_stored(store: ChatStore) -> None:
    current = started(store)
    store.append_user_message(current, UserMessage("質問", at(5), 0))
    assert fresh(store).updated_at == at(5)
    store.append_assistant_turn("s1", answer(2, created_at=at(6)), None, audit(2), 0)

    assert fresh(store).updated_at == at(6)
    assert store.session_page("u1", 5, None).sessions == [fresh(store)]


# -- messages ------------------------------------------------------------------------------------


def test_a_users_message_takes_the_next_seq_and_reserves_the_one_after_for_its_answer(store: ChatStore) -> None:
    current = started(store)

    assert store.append_user_message(current, UserMessage("最初の質問", at(1), 0, "k1")) == 1
    assert fresh(store).message_count == 2
    assert store.append_user_message(fresh(store), UserMessage("二つ目", at(2), 0)) == 3
    assert store.recent_messages("s1", 10) == [
        StoredMessage(1, "user", "最初の質問", at(1), MessageKind.MESSAGE),
        StoredMessage(3, "user", "二つ目", at(2), MessageKind.MESSAGE),
    ]


def test_a_message_sent_on_a_stale_read_of_the_session_takes_the_next_free_seq(store: ChatStore) -> None:
    stale = started(store)
    assert store.append_user_message(stale, UserMessage("first", CREATED, 0)) == 1
    assert (
        store.append_user_message(stale, UserMessage("second, sent concurrently", CREATED, 0)) == 3
    )  # read count 0, stored 2

    store.append_assistant_turn("s1", answer(4), None, audit(4), 0)
    store.append_assistant_turn("s1", answer(2), None, audit(2), 0)

    assert [(m.seq, m.role) for m in store.recent_messages("s1", 10)] == [
        (1, "user"),
        (2, "assistant"),
        (3, "user"),
        (4, "assistant"),
    ]
    assert [m.seq for m in store.recent_messages("s1", 2)] == [3, 4]
    assert fresh(store).message_count == 4


def test_a_message_to_a_missing_session_another_users_or_one_being_deleted_is_refused(store: ChatStore) -> None:
    mine = started(store)
    for intruder in (session("missing"), replace(mine, user_id="someone-else")):
        with pytest.raises(ConcurrentUpdate):
            store.append_user_message(intruder, UserMessage("x", CREATED, 0))
    store.mark_deleting("s1", "u1", CREATED)

    with pytest.raises(ConcurrentUpdate):
        store.append_user_message(mine, UserMessage("sent while deleting", CREATED, 0))
    assert store.recent_messages("s1", 10) == [] and store.recent_messages("missing", 10) == []


def test_the_recent_window_is_the_newest_messages_oldest_first(store: ChatStore) -> None:
    started(store)
    for text in ("一", "二", "三"):
        answered_turn(store, fresh(store), text)

    assert [m.seq for m in store.recent_messages("s1", 3)] == [4, 5, 6]
    assert [m.seq for m in store.recent_messages("s1", 50)] == [1, 2, 3, 4, 5, 6]
    assert store.recent_messages("s1", 1) == [answer(6)]


def test_history_pages_go_back_from_the_newest_and_say_whether_older_ones_remain(store: ChatStore) -> None:
    started(store)
    for text in ("一", "二", "三"):
        answered_turn(store, fresh(store), text)

    newest = store.message_page("s1", 4, None)
    assert [m.seq for m in newest.messages] == [3, 4, 5, 6] and newest.has_older
    older = store.message_page("s1", 4, newest.messages[0].seq)
    assert [m.seq for m in older.messages] == [1, 2] and not older.has_older
    middle = store.message_page("s1", 2, 5)
    assert [m.seq for m in middle.messages] == [3, 4] and middle.has_older
    assert store.message_page("s1", 1, 2).messages == store.recent_messages("s1", 6)[:1]
    whole = store.message_page("s1", 6, None)
    assert whole.messages == store.recent_messages("s1", 6) and not whole.has_older
    assert store.message_page("missing", 4, None).messages == []


# -- answers -------------------------------------------------------------------------------------


def test_an_answer_is_stored_with_its_draft_and_audit_and_its_seq_only_once(store: ChatStore) -> None:
    current = started(store)
    store.append_user_message(current, UserMessage("質問", CREATED, 0))
    store.append_assistant_turn("s1", answer(2), draft(2), audit(2), 0)

    other_draft = DraftRecord("s1", 4, {"processTemplateDraft": {"name": "別"}}, CREATED)  # would be the latest
    with pytest.raises(AnswerExists) as refused:
        store.append_assistant_turn("s1", answer(2, "another delivery"), other_draft, audit(2), 0)
    assert isinstance(refused.value, ConditionFailed)  # for a request: a conflicting write, 409

    turn = store.turn("s1", 1)
    assert turn.message == StoredMessage(1, "user", "質問", CREATED, MessageKind.MESSAGE)
    assert turn.answer == answer(2) and not turn.pending
    assert turn.audit is not None
    assert {key: turn.audit.get(key) for key in audit(2).as_dict()} == audit(2).as_dict()
    assert store.latest_draft("s1") == draft(2)  # the refused write's draft was not stored either


def test_an_answer_to_a_missing_session_or_one_being_deleted_is_refused_and_nothing_is_stored(
    store: ChatStore,
) -> None:
    with pytest.raises(SessionGone) as missing:
        store.append_assistant_turn("missing", answer(2), draft(2, "missing"), audit(2, "missing"), 0)
    assert not isinstance(missing.value, AnswerExists)  # not "answered before": the worker must not skip it silently
    assert isinstance(missing.value, ConditionFailed)  # for a request: a conflicting write, 409
    store.append_user_message(started(store), UserMessage("質問", CREATED, 0))
    store.mark_deleting("s1", "u1", CREATED)

    with pytest.raises(SessionGone):  # for the worker: the user deleted the chat, nothing to store
        store.append_assistant_turn("s1", answer(2), draft(2), audit(2), 0)
    assert store.turn("s1", 1).answer is None and store.turn("s1", 1).audit is None
    assert store.latest_draft("s1") is None and store.latest_draft("missing") is None
    assert store.turn("missing", 1).message is None


def test_the_latest_draft_is_the_one_of_the_highest_seq(store: ChatStore) -> None:
    started(store)
    assert store.latest_draft("s1") is None
    for _ in range(4):  # user messages 1, 3, 5, 7: answers 2, 4, 6, 8 reserved
        store.append_user_message(fresh(store), UserMessage("質問", CREATED, 0))
    for seq in (2, 6, 4):
        store.append_assistant_turn("s1", answer(seq), draft(seq), audit(seq), 0)
    store.append_assistant_turn("s1", answer(8), None, audit(8), 0)  # an answer without a valid draft

    assert store.latest_draft("s1") == draft(6)


def test_a_turn_says_whether_its_answer_is_the_workers_until_and_after_it_is_stored(store: ChatStore) -> None:
    seq = store.append_user_message(started(store), UserMessage("後で答えて", CREATED, 0))
    assert store.turn("s1", seq).message is not None and not store.turn("s1", seq).pending

    store.mark_answer_pending("s1", seq, at(1))
    waiting = store.turn("s1", seq)
    assert waiting.pending and waiting.answer is None and waiting.audit is None
    store.append_assistant_turn("s1", answer(seq + 1), None, audit(seq + 1), 0)

    answered = store.turn("s1", seq)
    assert not answered.pending and answered.answer == answer(seq + 1)  # the wait ends with the answer


def test_an_answer_to_no_stored_users_message_is_refused_and_nothing_is_stored(store: ChatStore) -> None:
    seq = answered_turn(store, started(store), "質問")  # messages 1 (user) and 2 (its answer)

    for reply in (seq + 1, 6):  # answering the answer 2, or a message 5 never stored
        with pytest.raises(ConditionFailed) as refused:
            store.append_assistant_turn("s1", answer(reply), draft(reply), audit(reply), 0)
        assert not isinstance(refused.value, (AnswerExists, SessionGone))
    assert [m.seq for m in store.recent_messages("s1", 10)] == [1, 2] and store.latest_draft("s1") is None


def test_only_a_stored_users_message_can_wait_for_the_worker(store: ChatStore) -> None:
    seq = answered_turn(store, started(store), "質問")

    for not_a_users_message in (seq, seq + 1, 99):
        with pytest.raises(ConditionFailed):
            store.mark_answer_pending("s1", not_a_users_message, at(1))
    assert not store.turn("s1", seq - 1).pending


def test_a_turn_before_the_first_message_or_past_the_last_holds_nothing(store: ChatStore) -> None:
    answered_turn(store, started(store), "質問")

    nothing = store.turn("s1", 0)  # message 1 is no answer to a message 0
    assert (nothing.message, nothing.answer, nothing.pending, nothing.audit) == (None, None, False, None)
    assert store.turn("s1", -1) == nothing and store.turn("s1", 99) == nothing
    past = store.turn("s1", 2)  # the seq names whatever message holds it; the caller checks its role
    assert past.message == answer(2) and past.answer is None and past.audit is None


# -- deletion ------------------------------------------------------------------------------------


def test_a_marked_session_is_neither_read_nor_listed_and_only_its_owner_can_mark_it(store: ChatStore) -> None:
    started(store)
    kept = started(store, "s2", "u1", at(1))

    assert store.mark_deleting("s1", "someone-else", at(2)) is None
    assert store.mark_deleting("missing", "u1", at(2)) is None
    assert store.get_session("s1") is not None
    marked = store.mark_deleting("s1", "u1", at(2))

    assert marked is not None and (marked.session_id, marked.user_id) == ("s1", "u1")
    assert store.get_session("s1") is None
    assert store.session_page("u1", 5, None).sessions == [kept]


def test_everything_under_a_marked_session_is_listed_then_deleted_and_the_session_goes_last(store: ChatStore) -> None:
    current = started(store)
    store.append_user_message(current, UserMessage("一", CREATED, 0, "retry-1"))
    store.append_assistant_turn("s1", answer(2), draft(2), audit(2), 0)
    answered_turn(store, fresh(store), "二")
    store.mark_answer_pending(
        "s1",
        store.append_user_message(fresh(store), UserMessage("三", CREATED, 0, client_message_id="socket-5")),
        at(1),
    )
    store.mark_deleting("s1", "u1", at(2))

    contents = store.session_contents("s1")
    assert contents.counts == {"audit": 2, "draft": 1, "message": 5}
    assert (contents.idempotency_keys, contents.client_message_ids) == (["retry-1"], ["socket-5"])
    assert (contents.draft_seqs, len(contents.keys)) == ([2], 8)
    assert store.delete_contents(contents) == 8
    store.delete_session_record("s1")

    assert store.get_session("s1") is None and store.mark_deleting("s1", "u1", at(3)) is None
    assert store.recent_messages("s1", 10) == [] and store.latest_draft("s1") is None
    turn = store.turn("s1", 5)
    assert (turn.message, turn.answer, turn.pending, turn.audit) == (None, None, False, None)
    assert store.session_contents("s1").keys == [] and store.session_page("u1", 5, None).sessions == []


def test_a_deletion_cut_short_is_finished_by_its_owner_and_an_unmarked_session_is_never_removed(
    store: ChatStore,
) -> None:
    answered_turn(store, started(store), "質問")
    store.delete_session_record("s1")  # not marked: nothing happens
    assert store.get_session("s1") is not None
    store.mark_deleting("s1", "u1", at(1))
    store.delete_contents(store.session_contents("s1"))  # cut short here: the session item stays, marked

    assert store.get_session("s1") is None and store.mark_deleting("s1", "someone-else", at(2)) is None
    again = store.mark_deleting("s1", "u1", at(2))  # the owner's DELETE repeated: theirs to finish
    assert again is not None and (again.session_id, again.user_id) == ("s1", "u1")
    assert store.session_contents("s1").keys == []
    store.delete_session_record("s1")
    assert store.mark_deleting("s1", "u1", at(3)) is None


def test_a_turn_in_flight_when_its_session_is_marked_can_store_neither_message(store: ChatStore) -> None:
    read_before = started(store)
    store.mark_deleting("s1", "u1", at(1))

    with pytest.raises(ConcurrentUpdate):
        store.append_user_message(read_before, UserMessage("sent while deleting", at(2), 0))
    with pytest.raises(ConditionFailed):
        store.append_assistant_turn("s1", answer(2), None, audit(2), 0)
    assert store.session_contents("s1").keys == []


# -- rate limit ------------------------------------------------------------------------------------


def test_a_users_messages_go_ahead_until_the_limit_and_another_users_are_not_counted(limiter: Limiter) -> None:
    assert [limiter.acquire("u1") for _ in range(LIMIT)] == [None] * LIMIT
    wait = limiter.acquire("u1")

    assert wait is not None and wait > 0
    assert limiter.acquire("u2") is None


def test_a_released_place_is_given_back_once(limiter: Limiter) -> None:
    for _ in range(LIMIT):
        limiter.acquire("u1")
    limiter.release("u1")
    limiter.release("u1")  # the same place again: nothing more to give back

    assert limiter.acquire("u1") is None
    assert limiter.acquire("u1") is not None


def test_a_release_with_no_place_taken_gives_nothing(limiter: Limiter) -> None:
    limiter.release("u1")

    assert [limiter.acquire("u1") for _ in range(LIMIT)] == [None] * LIMIT
    assert limiter.acquire("u1") is not None
