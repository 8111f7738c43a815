"""The employer's side of the interview: a job's applications, listed and read.

An application is an interview the applicant consented to (before consent nothing was collected,
so there is nothing for the employer to read); its id is the session id. A job's list is paged
newest first; the employer reads one application with its facts, the audit and the transcript.
An application of another job is "not found", like an unknown id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..errors import SessionNotFound
from ..repository import InterviewRepository, StoredInterview
from ..rules.models import SessionStatus
from .jobs import JobService

MAX_PAGE = 100


@dataclass(frozen=True)
class ApplicationSummary:
    application_id: str
    job_id: str
    job_version: int
    status: SessionStatus
    consented_at: str
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class ApplicationPage:
    items: list[ApplicationSummary]
    next_cursor: str | None


class ApplicationIndex(Protocol):
    def list_for_job(
        self, job_id: str, status: SessionStatus | None, limit: int, cursor: str | None
    ) -> ApplicationPage:
        """Newest first; ``InvalidCursor`` for a cursor this listing did not hand out."""
        ...


@dataclass
class EmployerApplications:
    index: ApplicationIndex
    interviews: InterviewRepository
    jobs: JobService

    def list(
        self, job_id: str, status: SessionStatus | None = None, limit: int = 20, cursor: str | None = None
    ) -> ApplicationPage:
        self.jobs.get(job_id)  # an unknown job is a 404, not an empty list
        return self.index.list_for_job(job_id, status, min(max(limit, 1), MAX_PAGE), cursor)

    def get(self, job_id: str, application_id: str) -> StoredInterview:
        stored = self.interviews.load(application_id)
        if stored is None or stored.session.job.job_id != job_id or stored.session.state.consent is None:
            raise SessionNotFound(f"job {job_id[:64]!r} has no application {application_id[:64]!r}")
        return stored
