"""In-memory stand-ins for the chat storage adapters of ``storage.chat``, for unit tests that want no
AWS: ``InMemoryChatStore`` for ``DynamoChatStore`` (the ChatStore port of ``chat.use_case``, the
SessionStore port of ``chat.sessions`` and the DraftSource port of ``chat.template_from_session``)
and ``CountingLimiter`` for ``DynamoRateLimiter`` (the RateLimiter port, at one instant).

Each refuses what its adapter refuses, with the adapter's own errors, and reads back what it
reads back; ``tests/integration/chat/test_chat_store_contract.py`` runs the same tests on both, so
a unit test's fake cannot drift from the adapter it stands in for. The store also keeps a log of
its writes in order (``events``, ``audits``), which the unit tests read to check that the user's
message is stored before the model is called and the answer after it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from lambda_agents.chat.audit import TurnAudit
from lambda_agents.chat.records import DraftRecord, MessageKind, SessionRecord, StoredMessage
from lambda_agents.chat.sessions import MessagePage, SessionContents, SessionListPage, SessionPosition
from lambda_agents.chat.store import StoredTurn, UserMessage
from lambda_agents.storage.chat import AnswerSeqTaken, AnswerToDeletedSession, ConcurrentUpdate
from lambda_agents.storage.chat_items import audit_sk, draft_sk, message_sk, session_key
from lambda_agents.storage.dynamodb import ConditionFailed


@dataclass
class InMemoryChatStore:
    """Sessions, their messages, drafts and audit records, kept as ``DynamoChatStore`` keeps them.

    A session marked for deletion (``deleting``) is no session to read, list, append to or answer
    in, but its messages stay readable until its contents are deleted, as in the adapter; the
    session goes only once marked (``delete_session_record``).
    """

    sessions: dict[str, SessionRecord] = field(default_factory=dict)
    messages: dict[str, list[StoredMessage]] = field(default_factory=dict)  # per session, in the order written
    drafts: dict[str, list[DraftRecord]] = field(default_factory=dict)
    audits: list[TurnAudit] = field(default_factory=list)  # every audit record written, in order (a log)
    events: list[str] = field(default_factory=list)  # every write, in order (a log)
    pending: set[tuple[str, int]] = field(default_factory=set)  # (session, user seq) handed to the worker
    deleting: set[str] = field(default_factory=set)
    audit_records: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)  # by (session, answer seq)
    idempotency_keys: dict[tuple[str, int], str] = field(default_factory=dict)  # by (session, user seq)
    client_message_ids: dict[tuple[str, int], str] = field(default_factory=dict)  # by (session, user seq)

    # -- sessions -----------------------------------------------------------------------------

    def create_session(self, session: SessionRecord, expires_at: int) -> None:
        if session.session_id in self.sessions:
            raise ConditionFailed(f"session {session.session_id} exists")
        self.sessions[session.session_id] = replace(session, message_count=0, updated_at=session.created_at)
        self.messages.setdefault(session.session_id, [])
        self.events.append("session")

    def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or None when it does not exist or is being deleted."""
        return None if session_id in self.deleting else self.sessions.get(session_id)

    def session_page(self, user_id: str, limit: int, after: SessionPosition | None) -> SessionListPage:
        """The user's sessions, newest first. A session being deleted keeps its place in the
        listing's order (the adapter's index holds it until its item goes) but is not shown."""
        listed = sorted(
            (session for session in self.sessions.values() if session.user_id == user_id),
            key=_position,
            reverse=True,
        )
        if after is not None:
            listed = [session for session in listed if _position(session) < (after.created_at, after.session_id)]
        page = listed[:limit]
        last = SessionPosition(page[-1].created_at, page[-1].session_id) if len(listed) > limit else None
        return SessionListPage([s for s in page if s.session_id not in self.deleting], last)

    # -- messages -----------------------------------------------------------------------------

    def append_user_message(self, session: SessionRecord, sent: UserMessage) -> int:
        """The next free seq, whatever count ``session`` was read with (the adapter retries on the
        fresh count); a missing session, another user's or one being deleted is refused."""
        current = self.get_session(session.session_id)
        if current is None or current.user_id != session.user_id:
            raise ConcurrentUpdate(f"session {session.session_id} changed during the write")
        seq = current.message_count + 1
        stored = StoredMessage(seq, "user", sent.content, sent.created_at, MessageKind.MESSAGE)
        self.messages[session.session_id].append(stored)
        if sent.idempotency_key:
            self.idempotency_keys[(session.session_id, seq)] = sent.idempotency_key
        if sent.client_message_id:
            self.client_message_ids[(session.session_id, seq)] = sent.client_message_id
        self.sessions[session.session_id] = replace(current, message_count=seq + 1, updated_at=sent.created_at)
        self.events.append(f"user:{seq}")
        return seq

    def recent_messages(self, session_id: str, limit: int) -> list[StoredMessage]:
        stored = self._in_order(session_id)
        return stored[max(0, len(stored) - limit) :]

    def message_page(self, session_id: str, limit: int, before_seq: int | None) -> MessagePage:
        older = [m for m in self._in_order(session_id) if before_seq is None or m.seq < before_seq]
        return MessagePage(older[max(0, len(older) - limit) :], has_older=len(older) > limit)

    def append_assistant_turn(
        self, session_id: str, message: StoredMessage, draft: DraftRecord | None, audit: TurnAudit, expires_at: int
    ) -> None:
        """All of it or nothing: refused when the seq is taken, when the session is missing or
        being deleted (an answer must not outlive the deletion), or when it answers no stored
        user's message; the user's message it answers waits no more."""
        if any(stored.seq == message.seq for stored in self.messages.get(session_id, [])):
            raise AnswerSeqTaken(f"session {session_id}: answer {message.seq} exists")
        session = self.get_session(session_id)
        if session is None:
            raise AnswerToDeletedSession(f"session {session_id} is missing or being deleted")
        if message.reply_to is not None:
            answered = self._by_seq(session_id).get(message.reply_to)
            if answered is None or answered.role != "user":
                raise ConditionFailed(f"session {session_id}: no user message {message.reply_to}")
            self.pending.discard((session_id, message.reply_to))
        self.messages[session_id].append(message)
        if draft is not None:
            self.drafts.setdefault(session_id, []).append(draft)
        self.audits.append(audit)
        record = {key: value for key, value in audit.as_dict().items() if value is not None}  # as DynamoDB keeps it
        self.audit_records[(session_id, message.seq)] = {**record, "createdAt": message.created_at}
        self.sessions[session_id] = replace(session, updated_at=message.created_at)
        self.events.append(f"assistant:{message.seq}")

    def mark_answer_pending(self, session_id: str, user_seq: int, since: str) -> None:
        stored = self._by_seq(session_id).get(user_seq)
        if stored is None or stored.role != "user":
            raise ConditionFailed(f"session {session_id}: no user message {user_seq}")
        self.pending.add((session_id, user_seq))
        self.events.append(f"pending:{user_seq}")

    def turn(self, session_id: str, user_seq: int) -> StoredTurn:
        if user_seq < 1:
            return StoredTurn(None, None)
        by_seq = self._by_seq(session_id)
        message, answer = by_seq.get(user_seq), by_seq.get(user_seq + 1)
        pending = message is not None and (session_id, user_seq) in self.pending
        return StoredTurn(message, answer, pending, self.audit_records.get((session_id, user_seq + 1)))

    def latest_draft(self, session_id: str) -> DraftRecord | None:
        return max(self.drafts.get(session_id, []), key=lambda draft: draft.seq, default=None)

    def add_history(self, session_id: str, *turns: tuple[str, str, MessageKind]) -> None:
        """Stored messages from earlier turns: (role, content, kind)."""
        for role, content, kind in turns:
            current = self.sessions[session_id]
            seq = current.message_count + 1
            self.messages[session_id].append(StoredMessage(seq, role, content, "t", kind))  # type: ignore[arg-type]
            self.sessions[session_id] = replace(current, message_count=seq)

    # -- deletion -----------------------------------------------------------------------------

    def mark_deleting(self, session_id: str, user_id: str, now: str) -> SessionRecord | None:
        """Mark the user's session (again, when a deletion was cut short); its count moves, as in
        the adapter. None when the user has no such session."""
        current = self.sessions.get(session_id)
        if current is None or current.user_id != user_id:
            return None
        self.deleting.add(session_id)
        self.sessions[session_id] = replace(current, message_count=current.message_count + 1)
        return self.sessions[session_id]

    def session_contents(self, session_id: str) -> SessionContents:
        """Everything under the session but the session itself, in the adapter's key order."""
        items = [(message_sk(m.seq), "message", m.seq) for m in self.messages.get(session_id, [])]
        items += [(draft_sk(d.seq), "draft", d.seq) for d in self.drafts.get(session_id, [])]
        items += [(audit_sk(seq), "audit", seq) for (owner, seq) in self.audit_records if owner == session_id]
        contents = SessionContents()
        for sk, kind, seq in sorted(items):
            contents.keys.append({"pk": session_key(session_id)["pk"], "sk": sk})
            contents.counts[kind] = contents.counts.get(kind, 0) + 1
            if kind == "message" and (session_id, seq) in self.idempotency_keys:
                contents.idempotency_keys.append(self.idempotency_keys[(session_id, seq)])
            if kind == "message" and (session_id, seq) in self.client_message_ids:
                contents.client_message_ids.append(self.client_message_ids[(session_id, seq)])
            if kind == "draft":
                contents.draft_seqs.append(seq)
        return contents

    def delete_contents(self, contents: SessionContents) -> int:
        for key in contents.keys:
            self._forget(key["pk"].removeprefix("SESSION#"), key["sk"])
        return len(contents.keys)

    def delete_session_record(self, session_id: str) -> None:
        """The session item, only while it is marked."""
        if session_id in self.deleting:
            self.deleting.discard(session_id)
            del self.sessions[session_id]

    # -- helpers ------------------------------------------------------------------------------

    def _in_order(self, session_id: str) -> list[StoredMessage]:
        return sorted(self.messages.get(session_id, []), key=lambda m: m.seq)

    def _by_seq(self, session_id: str) -> dict[int, StoredMessage]:
        return {message.seq: message for message in self.messages.get(session_id, [])}

    def _forget(self, session_id: str, sk: str) -> None:
        """Delete the one item ``sk`` names; one that is gone already is no error (as in DynamoDB)."""
        prefix, number = sk.split("#", 1)
        seq = int(number)
        if prefix == "MSG":
            self.messages[session_id] = [m for m in self.messages.get(session_id, []) if m.seq != seq]
            self.pending.discard((session_id, seq))
            self.idempotency_keys.pop((session_id, seq), None)
            self.client_message_ids.pop((session_id, seq), None)
        elif prefix == "DRAFT":
            kept = [draft for draft in self.drafts.pop(session_id, []) if draft.seq != seq]
            if kept:
                self.drafts[session_id] = kept
        elif prefix == "AUDIT":
            self.audit_records.pop((session_id, seq), None)


def _position(session: SessionRecord) -> tuple[str, str]:
    return session.created_at, session.session_id


@dataclass
class CountingLimiter:
    """The RateLimiter port at one instant (no window slides): ``limit`` places per user, and a
    refusal answers ``wait_s``. ``release`` gives back the place of the user's last accepted
    ``acquire``, once, as ``DynamoRateLimiter`` does; ``calls`` counts every ``acquire``."""

    limit: int = 1000
    calls: int = 0
    wait_s: float = 42.0
    taken: dict[str, int] = field(default_factory=dict)
    releasable: set[str] = field(default_factory=set)

    def acquire(self, user_id: str) -> float | None:
        self.calls += 1
        if self.taken.get(user_id, 0) >= self.limit:
            return self.wait_s
        self.taken[user_id] = self.taken.get(user_id, 0) + 1
        self.releasable.add(user_id)
        return None

    def release(self, user_id: str) -> None:
        if user_id in self.releasable:
            self.releasable.discard(user_id)
            self.taken[user_id] -= 1
