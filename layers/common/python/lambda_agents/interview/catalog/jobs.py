"""The employer's job catalog: jobs are created, versioned and closed; interviews start from them.

- A job's field definitions are validated like every field definition (``models.FieldDefinition``:
  distinct ids, bounded texts, ``required`` a JSON boolean); the applicant's client never sends
  them, so it cannot drop a required field.
- Every update is a new version; versions are immutable and an interview keeps the one it
  started from (``JobDefinition.version``), so a running interview never changes under the
  applicant and the employer reads each application against the fields it was asked.
- A closed job starts no new interview (the interview's first write checks it in the same
  transaction, so a close that races a start wins or loses whole); interviews already running
  can finish. A closed job takes no new version. Closing twice is not an error.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from ..errors import JobClosed, JobNotFound
from ..rules.models import FieldDefinition, JobDefinition

JOB_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
JOB_ID_MAX_CHARS = 64


class JobStatus(StrEnum):
    OPEN = "open"
    CLOSED = "closed"


class JobDraft(BaseModel):
    """What the employer sends for a new job or a new version (validated by ``requests.py``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str
    fields: list[FieldDefinition]


class Job(BaseModel):
    """One version of a job, with the job's current status."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    job_id: str
    version: int = Field(ge=1)
    title: str
    fields: list[FieldDefinition]
    status: JobStatus
    created_at: str  # the job's first version
    updated_at: str  # this version, or the close
    created_by: str  # the caller who wrote this version
    closed_at: str | None = None

    def definition(self) -> JobDefinition:
        return JobDefinition(job_id=self.job_id, version=self.version, title=self.title, fields=self.fields)


class JobRepository(Protocol):
    def create(self, job: Job) -> None:
        """Store version 1, or raise ``JobExists``."""
        ...

    def load(self, job_id: str, version: int | None = None) -> Job | None:
        """The latest version (or the given one) with the job's current status."""
        ...

    def add_version(self, job: Job) -> None:
        """Store ``job`` as the next version if ``job.version - 1`` is still the latest and the job
        is open; raise ``JobChanged`` or ``JobClosed`` otherwise (nothing is written)."""
        ...

    def close(self, job_id: str, closed_at: str) -> None:
        """Mark the job closed (a no-op on a closed job); ``JobNotFound`` when there is none."""
        ...


@dataclass
class JobService:
    repository: JobRepository
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    new_job_id: Callable[[], str] = lambda: uuid.uuid4().hex

    def create(self, draft: JobDraft, by: str, job_id: str | None = None) -> Job:
        now = self.clock().isoformat()
        job = Job(
            job_id=job_id or self.new_job_id(),
            version=1,
            title=draft.title,
            fields=draft.fields,
            status=JobStatus.OPEN,
            created_at=now,
            updated_at=now,
            created_by=by,
        )
        self.repository.create(job)
        return job

    def update(self, job_id: str, draft: JobDraft, by: str) -> Job:
        current = self.get(job_id)
        if current.status is JobStatus.CLOSED:
            raise JobClosed(f"job {job_id!r} is closed: it takes no new version")
        job = current.model_copy(
            update={
                "version": current.version + 1,
                "title": draft.title,
                "fields": draft.fields,
                "updated_at": self.clock().isoformat(),
                "created_by": by,
            }
        )
        self.repository.add_version(job)
        return job

    def close(self, job_id: str) -> Job:
        current = self.get(job_id)
        if current.status is JobStatus.CLOSED:
            return current
        now = self.clock().isoformat()
        self.repository.close(job_id, now)
        return current.model_copy(update={"status": JobStatus.CLOSED, "closed_at": now, "updated_at": now})

    def get(self, job_id: str, version: int | None = None) -> Job:
        job = self.repository.load(job_id, version)
        if job is None:
            suffix = f" version {version}" if version is not None else ""
            raise JobNotFound(f"no job {job_id[:64]!r}{suffix}")
        return job

    def open_job(self, job_id: str) -> JobDefinition:
        """The latest version of an open job, for a new interview (the JobCatalog port)."""
        job = self.get(job_id)
        if job.status is JobStatus.CLOSED:
            raise JobClosed(f"job {job_id!r} is closed: it starts no new interview")
        return job.definition()


class JobCatalog(Protocol):
    def open_job(self, job_id: str) -> JobDefinition: ...
