"""The employer's job catalog: versions are immutable, an interview starts from the latest
version of an open job, a closed job starts none and takes no new version."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from lambda_agents.interview.catalog.jobs import Job, JobDraft, JobService, JobStatus
from lambda_agents.interview.errors import JobChanged, JobClosed, JobExists, JobNotFound

from .support import JOB

DRAFT = JobDraft(title="Barista", fields=JOB.fields)


@dataclass
class InMemoryJobs:
    versions: dict[str, list[Job]] = field(default_factory=dict)

    def create(self, job: Job) -> None:
        if job.job_id in self.versions:
            raise JobExists(job.job_id)
        self.versions[job.job_id] = [job]

    def load(self, job_id: str, version: int | None = None) -> Job | None:
        history = self.versions.get(job_id)
        if not history:
            return None
        latest = history[-1]
        chosen = latest if version is None else next((j for j in history if j.version == version), None)
        return (
            None
            if chosen is None
            else chosen.model_copy(update={"status": latest.status, "closed_at": latest.closed_at})
        )

    def add_version(self, job: Job) -> None:
        history = self.versions[job.job_id]
        if history[-1].status is JobStatus.CLOSED:
            raise JobClosed(job.job_id)
        if history[-1].version != job.version - 1:
            raise JobChanged(job.job_id)
        history.append(job)

    def close(self, job_id: str, closed_at: str) -> None:
        history = self.versions[job_id]
        history[-1] = history[-1].model_copy(update={"status": JobStatus.CLOSED, "closed_at": closed_at})


def service() -> JobService:
    return JobService(InMemoryJobs(), new_job_id=lambda: "generated-id")


def test_a_new_job_is_version_1_open_with_the_employers_id_or_a_generated_one() -> None:
    jobs = service()
    assert (jobs.create(DRAFT, "ops", "REQ-1").job_id, jobs.create(DRAFT, "ops").job_id) == ("REQ-1", "generated-id")
    job = jobs.get("REQ-1")
    assert (job.version, job.status, job.created_by) == (1, JobStatus.OPEN, "ops")
    with pytest.raises(JobExists):
        jobs.create(DRAFT, "ops", "REQ-1")


def test_an_update_is_a_new_version_and_the_old_one_stays_readable() -> None:
    jobs = service()
    jobs.create(DRAFT, "ops", "REQ-1")
    fewer = JobDraft(title="Barista (part time)", fields=JOB.fields[:2])
    assert jobs.update("REQ-1", fewer, "lead").version == 2
    assert jobs.open_job("REQ-1").version == 2 and jobs.open_job("REQ-1").field_ids == ["experience", "motivation"]
    assert jobs.get("REQ-1", 1).definition().field_ids == JOB.field_ids
    with pytest.raises(JobNotFound):
        jobs.get("REQ-1", 3)


def test_a_closed_job_starts_no_interview_takes_no_version_and_closing_again_is_no_error() -> None:
    jobs = service()
    jobs.create(DRAFT, "ops", "REQ-1")
    closed = jobs.close("REQ-1")
    assert closed.status is JobStatus.CLOSED and closed.closed_at is not None
    assert jobs.close("REQ-1").closed_at == closed.closed_at
    with pytest.raises(JobClosed):
        jobs.open_job("REQ-1")
    with pytest.raises(JobClosed):
        jobs.update("REQ-1", DRAFT, "ops")
    with pytest.raises(JobNotFound):
        jobs.open_job("nope")
