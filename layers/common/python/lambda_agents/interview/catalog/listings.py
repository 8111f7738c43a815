"""The job catalog as lists (docs/interview.md#job-catalog): the employer's jobs
and the open jobs an applicant may start an interview for.

- Both are newest first (by the job's creation time, then its id) and paged with the API's opaque,
  scope-bound cursors (``paging.py``): a cursor names a position in one listing, and one from
  another listing (the applicant's, or the employer's under another status filter) is a 400.
- The employer sees every job's summary (status, latest version, times, number of fields); the
  status filter narrows it.
- An applicant sees open jobs only, each with what the interview's notice shows before consent
  (``notice.NoticeField``: field id, label, required) and nothing else of the employer's field
  definitions (no intents, done criteria or required facts). A close removes the job from that
  list in the same write that closes it; the list is read from an index, which may trail that
  write by up to a second, and starting an interview checks the job itself (409 ``JOB_CLOSED``).

Jobs belong to the stack's employer (every IAM caller of ``/api/admin``), so the catalog is one
listing, not one per caller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from ... import paging
from .jobs import JOB_ID_PATTERN, JobStatus
from .notice import NoticeField

MAX_PAGE = 100
DEFAULT_PAGE = 20
_JOB_ID = re.compile(JOB_ID_PATTERN)
_OPEN_SCOPE = "jobs:open"
T = TypeVar("T")


@dataclass(frozen=True, order=True)
class CatalogPosition:
    """Where a page ended: the last job's creation time and id (the listings' sort order)."""

    created_at: str
    job_id: str


@dataclass(frozen=True)
class JobSummary:
    job_id: str
    title: str
    status: JobStatus
    latest_version: int
    created_at: str
    updated_at: str
    closed_at: str | None
    field_count: int

    @property
    def position(self) -> CatalogPosition:
        return CatalogPosition(self.created_at, self.job_id)


@dataclass(frozen=True)
class OpenJob:
    job_id: str
    title: str
    latest_version: int
    created_at: str
    fields: list[NoticeField]

    @property
    def position(self) -> CatalogPosition:
        return CatalogPosition(self.created_at, self.job_id)


@dataclass(frozen=True)
class CatalogPage(Generic[T]):
    """One page from the index; ``next`` is None when nothing older is left."""

    items: list[T]
    next: CatalogPosition | None


@dataclass(frozen=True)
class JobListing(Generic[T]):
    items: list[T]
    next_cursor: str | None


class JobCatalogIndex(Protocol):
    def jobs_page(
        self, status: JobStatus | None, limit: int, before: CatalogPosition | None
    ) -> CatalogPage[JobSummary]:
        """Every job (or those in ``status``) older than ``before``, newest first, at most ``limit``."""
        ...

    def open_jobs_page(self, limit: int, before: CatalogPosition | None) -> CatalogPage[OpenJob]:
        """Open jobs older than ``before``, newest first, at most ``limit``."""
        ...


@dataclass
class JobListings:
    index: JobCatalogIndex

    def employer_jobs(
        self, status: JobStatus | None = None, limit: int = DEFAULT_PAGE, cursor: str | None = None
    ) -> JobListing[JobSummary]:
        scope = f"jobs:employer:{status.value if status is not None else 'any'}"
        page = self.index.jobs_page(status, _bounded(limit), _position(cursor, scope))
        return JobListing(page.items, _cursor(page.next, scope))

    def open_jobs(self, limit: int = DEFAULT_PAGE, cursor: str | None = None) -> JobListing[OpenJob]:
        page = self.index.open_jobs_page(_bounded(limit), _position(cursor, _OPEN_SCOPE))
        return JobListing(page.items, _cursor(page.next, _OPEN_SCOPE))


def _bounded(limit: int) -> int:
    return min(max(limit, 1), MAX_PAGE)


def _cursor(position: CatalogPosition | None, scope: str) -> str | None:
    if position is None:
        return None
    return paging.encode_created_position(scope, position.created_at, "jobId", position.job_id)


def _position(cursor: str | None, scope: str) -> CatalogPosition | None:
    if cursor is None:
        return None
    return CatalogPosition(*paging.decode_created_position(cursor, scope, "jobId", _JOB_ID))
