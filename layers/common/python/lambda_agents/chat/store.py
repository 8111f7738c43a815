"""The chat's storage port (``storage.chat.DynamoChatStore`` implements it; docs/chat-and-templates.md#storage),
and what its writes answer when a turn's answer has nowhere to go."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .audit import TurnAudit
from .records import DraftRecord, SessionRecord, StoredMessage


@dataclass(frozen=True)
class UserMessage:
    """A user's message as stored: kept with the ``idempotency_key`` (REST) or the
    ``client_message_id`` (WebSocket) it was sent with, so that deleting the session can delete the
    retry record that holds a copy of its answer (each kept under a key of its own)."""

    content: str
    created_at: str
    expires_at: int
    idempotency_key: str | None = None
    client_message_id: str | None = None


class ChatStore(Protocol):
    def create_session(self, session: SessionRecord, expires_at: int) -> None: ...

    def get_session(self, session_id: str) -> SessionRecord | None: ...

    def append_user_message(self, session: SessionRecord, message: UserMessage) -> int:
        """Store the message under the next seq, reserve the one after for the answer; return the message's seq."""
        ...

    def recent_messages(self, session_id: str, limit: int) -> list[StoredMessage]:
        """The newest ``limit`` messages, in order (strongly consistent)."""
        ...

    def append_assistant_turn(
        self, session_id: str, message: StoredMessage, draft: DraftRecord | None, audit: TurnAudit, expires_at: int
    ) -> None:
        """Store the answer, its draft and its audit record atomically, and end its user message's
        wait (``StoredTurn.pending``); ``AnswerExists`` when the answer's seq is already taken
        (another delivery of the same pending turn answered it), ``SessionGone`` when the session
        is gone or being deleted."""
        ...

    def mark_answer_pending(self, session_id: str, user_seq: int, since: str) -> None:
        """Note on the user's message that its answer is the worker's, until the answer is stored."""
        ...

    def turn(self, session_id: str, user_seq: int) -> StoredTurn:
        """The user's message of that seq, its answer and the answer's audit record, read consistently."""
        ...


@dataclass(frozen=True)
class StoredTurn:
    message: StoredMessage | None
    answer: StoredMessage | None
    pending: bool = False
    audit: dict[str, Any] | None = None


class AnswerExists(Exception):
    """The answer's seq is taken: the turn was answered already (at-least-once delivery)."""


class SessionGone(Exception):
    """The session is gone, or its deletion began, before the answer was stored: the answer has
    nowhere to go. For the worker a normal end of a turn (the user deleted the chat meanwhile)."""
