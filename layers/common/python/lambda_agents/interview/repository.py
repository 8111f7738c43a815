"""The repository port the interview service persists through (docs/interview.md#versions-and-conflicts).

``storage/interviews.py`` implements it on DynamoDB; unit tests use an in-memory one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .pending_turns import PendingTurn
from .rules.application_events import ApplicationEvent
from .rules.models import ChatMessage, InterviewSession


@dataclass(frozen=True)
class StoredInterview:
    session: InterviewSession
    messages: list[ChatMessage]
    pending: PendingTurn | None = None  # a turn handed to the worker and not committed yet


@dataclass(frozen=True)
class TurnCommit:
    """One write of the session at ``expected_version + 1``: a turn (its messages), or an
    applicant's action (consent, skip) without messages. ``events`` go to the outbox in the same
    transaction; ``idempotency_record`` names the retry record the turn's answer is kept under,
    so a withdrawal can delete it."""

    session: InterviewSession
    expected_version: int
    messages: list[ChatMessage]
    events: tuple[ApplicationEvent, ...] = ()
    idempotency_record: str | None = None
    # The worker's commit of a pending turn: only while the session's mark is that turn's, and the
    # reply stored under ``turn_id`` for the client to read (``answer``), in the same transaction.
    pending_turn_id: str | None = None
    turn_id: str | None = None
    answer: dict[str, Any] | None = None


@dataclass(frozen=True)
class Withdrawal:
    found: bool  # the user's session existed (or its withdrawal had begun)
    to_announce: tuple[ApplicationEvent, ...] = ()  # its withdrawal events still in the outbox


class InterviewRepository(Protocol):
    def create(self, session: InterviewSession) -> None:
        """Store a new session; raise ``JobClosed`` when its job was closed in the meantime."""
        ...

    def commit_turn(self, commit: TurnCommit) -> None:
        """Write the turn atomically, or raise ``VersionConflict`` and write nothing."""
        ...

    def load(self, session_id: str) -> StoredInterview | None:
        """The session and its transcript; None when there is none or its withdrawal has begun."""
        ...

    def mark_pending(self, session_id: str, user_id: str, expected_version: int, pending: PendingTurn) -> None:
        """Mark the session's turn as the worker's (at ``expected_version``, with no other turn
        pending); ``VersionConflict`` when the session changed or another turn is pending."""
        ...

    def release_pending(self, session_id: str, turn_id: str, failure: dict[str, Any] | None) -> None:
        """Lift the mark of ``turn_id`` (a queue that refused it, a worker that gave up), storing
        ``failure`` as the turn's outcome when given."""
        ...

    def turn_record(self, session_id: str, turn_id: str) -> dict[str, Any] | None:
        """What a turn handed to the worker came to: its reply, or its failure; None until then."""
        ...

    def withdraw(self, session_id: str, user_id: str, event: ApplicationEvent | None) -> Withdrawal:
        """Delete everything stored for the user's session: its items, RunSteps, outbox entries
        and retry records. The session is marked first (a turn in flight can no longer commit,
        and it is gone for every reader) and deleted last, so a retry after a partial failure
        finishes the job. ``event`` is written with the mark, when this call makes it; the
        withdrawal events still unpublished (this one, or a failed attempt's) are returned."""
        ...
