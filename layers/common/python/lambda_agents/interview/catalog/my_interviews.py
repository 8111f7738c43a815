"""An applicant's own interviews as a list (``GET /interviews``): how an applicant who lost a
session id finds it again, to read or withdraw the interview.

- Only the caller's interviews, newest first (by creation time, then session id), each a short
  summary: the job and its version, the job's title, where the interview stands (status and the
  agent at work, as ``GET /interviews/{id}`` names them), times and whether consent was given.
  Nothing of the audit (its summary, its violations): those are the employer's.
- An interview whose withdrawal has begun is not listed: the withdrawal's first write removes it
  from the index the list reads.
- Paged with the API's opaque cursors (``paging.py``) bound to the caller: a cursor issued to
  another user, edited or garbled is a 400 (``InvalidCursor``), never a page of someone else's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from ... import paging
from ..rules.models import SESSION_ID_PATTERN, AgentName, SessionStatus

MAX_PAGE = 100
DEFAULT_PAGE = 20
_SESSION_ID = re.compile(SESSION_ID_PATTERN)


@dataclass(frozen=True, order=True)
class InterviewPosition:
    """Where a page ended: the last interview's creation time and id (the list's sort order)."""

    created_at: str
    session_id: str


@dataclass(frozen=True)
class InterviewSummary:
    session_id: str
    job_id: str
    job_version: int
    job_title: str | None
    status: SessionStatus
    current_agent: AgentName | None
    consented: bool
    created_at: str
    updated_at: str

    @property
    def position(self) -> InterviewPosition:
        return InterviewPosition(self.created_at, self.session_id)


@dataclass(frozen=True)
class InterviewPage:
    """One page from the index; ``next`` is None when nothing older is left."""

    items: list[InterviewSummary]
    next: InterviewPosition | None


@dataclass(frozen=True)
class InterviewListing:
    items: list[InterviewSummary]
    next_cursor: str | None


class ApplicantInterviewIndex(Protocol):
    def interviews_page(self, user_id: str, limit: int, before: InterviewPosition | None) -> InterviewPage:
        """The user's interviews (none being withdrawn) older than ``before``, newest first, at most ``limit``."""
        ...


@dataclass
class MyInterviews:
    index: ApplicantInterviewIndex

    def list(self, user_id: str, limit: int = DEFAULT_PAGE, cursor: str | None = None) -> InterviewListing:
        scope = f"interviews:{user_id}"
        page = self.index.interviews_page(user_id, min(max(limit, 1), MAX_PAGE), _position(cursor, scope))
        return InterviewListing(page.items, _cursor(page.next, scope))


def _cursor(position: InterviewPosition | None, scope: str) -> str | None:
    if position is None:
        return None
    return paging.encode_created_position(scope, position.created_at, "sessionId", position.session_id)


def _position(cursor: str | None, scope: str) -> InterviewPosition | None:
    if cursor is None:
        return None
    return InterviewPosition(*paging.decode_created_position(cursor, scope, "sessionId", _SESSION_ID))
