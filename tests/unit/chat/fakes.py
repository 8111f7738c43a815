"""In-memory ports for the chat use case (no AWS), recording the order of writes."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from lambda_agents.chat.audit import TurnAudit
from lambda_agents.chat.pending import PendingTurn
from lambda_agents.chat.records import DraftRecord, MessageKind, SessionRecord, StoredMessage
from lambda_agents.chat.use_case import AnswerExists, StoredTurn


@dataclass
class InMemoryChatStore:
    sessions: dict[str, SessionRecord] = field(default_factory=dict)
    messages: dict[str, list[StoredMessage]] = field(default_factory=dict)
    drafts: dict[str, list[DraftRecord]] = field(default_factory=dict)
    audits: list[TurnAudit] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    pending: set[tuple[str, int]] = field(default_factory=set)
    deleting: set[str] = field(default_factory=set)

    def create_session(self, session: SessionRecord, expires_at: int) -> None:
        self.sessions[session.session_id] = session
        self.messages[session.session_id] = []
        self.events.append("session")

    def get_session(self, session_id: str) -> SessionRecord | None:
        return self.sessions.get(session_id)

    def append_user_message(
        self,
        session: SessionRecord,
        content: str,
        created_at: str,
        expires_at: int,
        idempotency_key: str | None = None,
    ) -> int:
        current = self.sessions[session.session_id]
        seq = current.message_count + 1
        self.messages[session.session_id].append(StoredMessage(seq, "user", content, created_at, MessageKind.MESSAGE))
        self.sessions[session.session_id] = replace(current, message_count=current.message_count + 2)
        self.events.append(f"user:{seq}")
        return seq

    def recent_messages(self, session_id: str, limit: int) -> list[StoredMessage]:
        return sorted(self.messages[session_id], key=lambda m: m.seq)[-limit:]

    def append_assistant_turn(
        self, session_id: str, message: StoredMessage, draft: DraftRecord | None, audit: TurnAudit, expires_at: int
    ) -> None:
        if any(stored.seq == message.seq for stored in self.messages[session_id]):
            raise AnswerExists(f"answer {message.seq} exists")
        if session_id in self.deleting:
            raise LookupError("the session is being deleted")
        self.messages[session_id].append(message)
        if draft is not None:
            self.drafts.setdefault(session_id, []).append(draft)
        self.audits.append(audit)
        self.events.append(f"assistant:{message.seq}")

    def mark_answer_pending(self, session_id: str, user_seq: int, since: str) -> None:
        self.pending.add((session_id, user_seq))
        self.events.append(f"pending:{user_seq}")

    def turn(self, session_id: str, user_seq: int) -> StoredTurn:
        by_seq = {message.seq: message for message in self.messages.get(session_id, [])}
        answer = by_seq.get(user_seq + 1)
        audit = next((a.as_dict() for a in self.audits if a.session_id == session_id and a.seq == user_seq + 1), None)
        return StoredTurn(by_seq.get(user_seq), answer, (session_id, user_seq) in self.pending, audit)

    def add_history(self, session_id: str, *turns: tuple[str, str, MessageKind]) -> None:
        """Stored messages from earlier turns: (role, content, kind)."""
        for role, content, kind in turns:
            current = self.sessions[session_id]
            seq = current.message_count + 1
            self.messages[session_id].append(StoredMessage(seq, role, content, "t", kind))  # type: ignore[arg-type]
            self.sessions[session_id] = SessionRecord(
                current.session_id, current.user_id, current.context, current.created_at, seq
            )


@dataclass
class CountingLimiter:
    limit: int = 1000
    calls: int = 0
    wait_s: float = 42.0

    def acquire(self, user_id: str) -> float | None:
        self.calls += 1
        return None if self.calls <= self.limit else self.wait_s

    def release(self, user_id: str) -> None:
        self.calls -= 1


def no_text_in(record: dict[str, Any], *texts: str) -> bool:
    flat = repr(record)
    return not any(text and text in flat for text in texts)


@dataclass
class RecordingAnswerQueue:
    """The AnswerQueue port: what was handed to the worker; ``broken`` refuses every send."""

    sent: list[PendingTurn] = field(default_factory=list)
    broken: bool = False

    def send(self, turn: PendingTurn) -> None:
        if self.broken:
            raise ConnectionError("the queue is unreachable")
        self.sent.append(turn)
