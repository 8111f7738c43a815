"""Reading, listing and deleting the caller's chat sessions: what
``POST /ai-agent/sessions/{id}/messages`` writes, read back and removed
(docs/chat-and-templates.md#reading-and-listing-sessions, docs/chat-and-templates.md#deleting-a-session).

- ``read``: a session with one page of its history. The first page holds the latest messages and
  each cursor reaches older ones, so a client shows the conversation at once and scrolls back.
- ``list``: the caller's sessions, newest first, page by page.
- ``delete``: the session and everything stored under it: messages, drafts, audit records, and the
  retry records (a REST ``Idempotency-Key``'s, a socket ``clientMessageId``'s) that hold copies of
  its answers. Templates created from the
  session are the user's own resources and stay; they lose their reference to it
  (``source.sessionId`` / ``draftSeq``), so no stored item names the deleted session. The order
  makes an interrupted deletion safe to repeat (see ``storage/chat.py``).

Another user's session, a missing one and one being deleted are all ``SessionNotFound`` (404):
ids of others are never confirmed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from ..clock import utc_now
from ..paging import (
    InvalidCursor,
    decode_created_position,
    decode_cursor,
    encode_created_position,
    encode_cursor,
)
from ..templates.models import chat_template_id
from .records import SessionNotFound, SessionRecord, StoredMessage
from .requests import SESSION_ID_PATTERN_RE

ISO_TIMESTAMP_MAX_CHARS = 40


@dataclass(frozen=True)
class MessagePage:
    messages: list[StoredMessage]  # oldest first
    has_older: bool


@dataclass(frozen=True)
class SessionPosition:
    """Where a listing of one user's sessions stopped: the index's sort key and the session id."""

    created_at: str
    session_id: str


@dataclass(frozen=True)
class SessionListPage:
    sessions: list[SessionRecord]
    last: SessionPosition | None  # set when more sessions follow


@dataclass
class SessionContents:
    """What is stored under one session besides the session item itself."""

    keys: list[dict[str, str]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    idempotency_keys: list[str] = field(default_factory=list)  # the REST messages' Idempotency-Keys
    client_message_ids: list[str] = field(default_factory=list)  # the socket messages' clientMessageIds
    draft_seqs: list[int] = field(default_factory=list)


class SessionStore(Protocol):
    def get_session(self, session_id: str) -> SessionRecord | None: ...

    def message_page(self, session_id: str, limit: int, before_seq: int | None) -> MessagePage:
        """Up to ``limit`` messages older than ``before_seq`` (the newest without it), oldest first."""
        ...

    def session_page(self, user_id: str, limit: int, after: SessionPosition | None) -> SessionListPage:
        """The user's sessions, newest first."""
        ...

    def mark_deleting(self, session_id: str, user_id: str, now: str) -> SessionRecord | None:
        """Mark the user's session for deletion; None when the user has no such session."""
        ...

    def session_contents(self, session_id: str) -> SessionContents: ...

    def delete_contents(self, contents: SessionContents) -> int: ...

    def delete_session_record(self, session_id: str) -> None: ...


class RetryRecords(Protocol):
    def forget(
        self, user_id: str, session_id: str, idempotency_keys: Sequence[str], client_message_ids: Sequence[str]
    ) -> int:
        """Delete the retry records of these REST keys and socket message ids; returns how many
        ids were deleted."""
        ...


class TemplateReferences(Protocol):
    def detach_chat_session(self, user_id: str, session_id: str, template_ids: Sequence[str]) -> int:
        """Drop the session reference of those of ``template_ids`` that name it; returns how many."""
        ...


@dataclass(frozen=True)
class SessionHistory:
    session: SessionRecord
    messages: list[StoredMessage]
    next_cursor: str | None

    def as_response(self) -> dict[str, Any]:
        return {
            **self.session.as_summary(),
            "messages": [message.as_response() for message in self.messages],
            "nextCursor": self.next_cursor,
        }


@dataclass(frozen=True)
class SessionListing:
    sessions: list[SessionRecord]
    next_cursor: str | None

    def as_response(self) -> dict[str, Any]:
        items = [session.as_summary() for session in self.sessions]
        return {"items": items, "count": len(items), "nextCursor": self.next_cursor}


@dataclass(frozen=True)
class SessionDeletion:
    session_id: str
    counts: dict[str, int]
    retry_records: int
    templates_detached: int

    def as_response(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "deleted": {
                "messages": self.counts.get("message", 0),
                "drafts": self.counts.get("draft", 0),
                "auditRecords": self.counts.get("audit", 0),
                "retryRecords": self.retry_records,
            },
            "templatesDetached": self.templates_detached,
        }


def _messages_scope(user_id: str, session_id: str) -> str:
    return f"chat-messages:{user_id}:{session_id}"


def _sessions_scope(user_id: str) -> str:
    return f"chat-sessions:{user_id}"


@dataclass
class ChatSessionsService:
    store: SessionStore
    retries: RetryRecords
    templates: TemplateReferences
    clock: Callable[[], datetime] = utc_now

    def read(self, user_id: str, session_id: str, limit: int, cursor: str | None) -> SessionHistory:
        session = self._owned(user_id, session_id)
        before = None if cursor is None else _before_seq(decode_cursor(cursor, _messages_scope(user_id, session_id)))
        page = self.store.message_page(session_id, limit, before)
        next_cursor = None
        if page.has_older and page.messages:
            next_cursor = encode_cursor(_messages_scope(user_id, session_id), {"before": page.messages[0].seq})
        return SessionHistory(session, list(page.messages), next_cursor)

    def list(self, user_id: str, limit: int, cursor: str | None) -> SessionListing:
        after = None
        if cursor is not None:
            created_at, session_id = decode_created_position(
                cursor, _sessions_scope(user_id), "sessionId", SESSION_ID_PATTERN_RE, ISO_TIMESTAMP_MAX_CHARS
            )
            after = SessionPosition(created_at, session_id)
        page = self.store.session_page(user_id, limit, after)
        next_cursor = None
        if page.last is not None:
            next_cursor = encode_created_position(
                _sessions_scope(user_id), page.last.created_at, "sessionId", page.last.session_id
            )
        return SessionListing(list(page.sessions), next_cursor)

    def delete(self, user_id: str, session_id: str) -> SessionDeletion:
        now = self.clock().astimezone(UTC).isoformat(timespec="milliseconds")
        session = self.store.mark_deleting(session_id, user_id, now)
        if session is None:
            raise SessionNotFound(session_id)
        contents = self.store.session_contents(session_id)
        retry_records = self.retries.forget(user_id, session_id, contents.idempotency_keys, contents.client_message_ids)
        candidates = [chat_template_id(session.template_link, seq) for seq in contents.draft_seqs]
        detached = self.templates.detach_chat_session(user_id, session_id, candidates)
        self.store.delete_contents(contents)
        self.store.delete_session_record(session_id)
        return SessionDeletion(session_id, dict(contents.counts), retry_records, detached)

    def _owned(self, user_id: str, session_id: str) -> SessionRecord:
        session = self.store.get_session(session_id)
        if session is None or session.user_id != user_id:
            raise SessionNotFound(session_id)
        return session


def _before_seq(position: dict[str, Any]) -> int:
    before = position.get("before")
    if set(position) != {"before"} or type(before) is not int or before < 2:
        raise InvalidCursor("cursor is not one this API issued")
    return before
