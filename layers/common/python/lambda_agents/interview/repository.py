"""The repository port the interview service persists through (spec 003 "API Layer": 結果の永続化).

``storage/interviews.py`` implements it on DynamoDB; unit tests use an in-memory one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .models import ChatMessage, InterviewSession


@dataclass(frozen=True)
class StoredInterview:
    session: InterviewSession
    messages: list[ChatMessage]


@dataclass(frozen=True)
class TurnCommit:
    """One turn's write: the session item at ``expected_version + 1`` and the turn's messages."""

    session: InterviewSession
    expected_version: int
    messages: list[ChatMessage]


class InterviewRepository(Protocol):
    def create(self, session: InterviewSession) -> None: ...

    def load(self, session_id: str) -> StoredInterview | None: ...

    def commit_turn(self, commit: TurnCommit) -> None:
        """Write the turn atomically, or raise ``VersionConflict`` and write nothing."""
        ...
