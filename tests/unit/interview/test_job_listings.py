"""The job catalog as lists: the employer's jobs and the applicant's open jobs, newest first,
paged with cursors bound to their listing (an in-memory catalog stands for the indexes)."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import TypeVar

import pytest
from lambda_agents.interview.catalog.jobs import Job, JobDraft, JobService, JobStatus
from lambda_agents.interview.catalog.listings import (
    MAX_PAGE,
    CatalogPage,
    CatalogPosition,
    JobListings,
    JobSummary,
    OpenJob,
)
from lambda_agents.interview.catalog.notice import NoticeField
from lambda_agents.paging import InvalidCursor, encode_cursor

from .support import JOB, clock_ticking_by_the_minute
from .test_jobs import InMemoryJobs

Listed = TypeVar("Listed", JobSummary, OpenJob)
DRAFT = JobDraft(title="Barista", fields=JOB.fields)


@dataclass
class InMemoryCatalog(InMemoryJobs):
    """Jobs and both listings: the head of a job is its latest version with its current status."""

    def jobs_page(
        self, status: JobStatus | None, limit: int, before: CatalogPosition | None
    ) -> CatalogPage[JobSummary]:
        heads = [job for job in self._newest_first(before) if status is None or job.status is status]
        return _page([_summary(job) for job in heads], limit)

    def open_jobs_page(self, limit: int, before: CatalogPosition | None) -> CatalogPage[OpenJob]:
        heads = [job for job in self._newest_first(before) if job.status is JobStatus.OPEN]
        return _page([_open(job) for job in heads], limit)

    def _newest_first(self, before: CatalogPosition | None) -> list[Job]:
        heads = sorted((history[-1] for history in self.versions.values()), key=_position, reverse=True)
        return [job for job in heads if before is None or _position(job) < before]


def _position(job: Job) -> CatalogPosition:
    return CatalogPosition(job.created_at, job.job_id)


def _page(items: list[Listed], limit: int) -> CatalogPage[Listed]:
    shown = items[:limit]
    return CatalogPage(shown, shown[-1].position if len(items) > limit else None)


def _summary(job: Job) -> JobSummary:
    return JobSummary(
        job.job_id, job.title, job.status, job.version, job.created_at, job.updated_at, job.closed_at, len(job.fields)
    )


def _open(job: Job) -> OpenJob:
    fields = [NoticeField(field_id=f.field_id, label=f.label, required=f.required) for f in job.fields]
    return OpenJob(job.job_id, job.title, job.version, job.created_at, fields)


@dataclass
class Catalog:
    jobs: JobService
    listings: JobListings


@pytest.fixture
def catalog() -> Catalog:
    store = InMemoryCatalog()
    return Catalog(JobService(store, clock=clock_ticking_by_the_minute()), JobListings(store))


def created(catalog: Catalog, *job_ids: str) -> None:
    for job_id in job_ids:
        catalog.jobs.create(DRAFT, "ops", job_id)


def ids(items: list[JobSummary] | list[OpenJob]) -> list[str]:
    return [item.job_id for item in items]


def test_given_five_jobs_when_the_employer_pages_by_two_then_the_newest_come_first_and_the_last_page_ends(
    catalog: Catalog,
) -> None:
    created(catalog, "a", "b", "c", "d", "e")

    first = catalog.listings.employer_jobs(limit=2)
    second = catalog.listings.employer_jobs(limit=2, cursor=first.next_cursor)
    third = catalog.listings.employer_jobs(limit=2, cursor=second.next_cursor)

    assert [ids(first.items), ids(second.items), ids(third.items)] == [["e", "d"], ["c", "b"], ["a"]]
    assert third.next_cursor is None
    summary = first.items[0]
    assert (summary.status, summary.latest_version, summary.field_count, summary.closed_at) == (
        JobStatus.OPEN,
        1,
        len(JOB.fields),
        None,
    )


def test_given_open_and_closed_jobs_when_the_employer_filters_by_status_then_only_that_status_is_listed(
    catalog: Catalog,
) -> None:
    created(catalog, "a", "b", "c")
    catalog.jobs.close("b")

    assert ids(catalog.listings.employer_jobs(JobStatus.OPEN).items) == ["c", "a"]
    closed = catalog.listings.employer_jobs(JobStatus.CLOSED).items
    assert ids(closed) == ["b"] and closed[0].closed_at is not None
    assert ids(catalog.listings.employer_jobs().items) == ["c", "b", "a"]


def test_given_an_open_job_when_it_is_closed_then_the_applicants_list_drops_it_at_once(catalog: Catalog) -> None:
    created(catalog, "a", "b")
    assert ids(catalog.listings.open_jobs().items) == ["b", "a"]

    catalog.jobs.close("b")

    assert ids(catalog.listings.open_jobs().items) == ["a"]


def test_given_a_new_version_when_listed_then_title_version_and_fields_are_the_latest_and_the_order_stays(
    catalog: Catalog,
) -> None:
    created(catalog, "a", "b")

    catalog.jobs.update("a", JobDraft(title="Barista (part time)", fields=JOB.fields[:1]), "lead")

    employer = catalog.listings.employer_jobs().items
    assert ids(employer) == ["b", "a"]  # by creation: a new version does not move a job up
    assert (employer[1].title, employer[1].latest_version, employer[1].field_count) == ("Barista (part time)", 2, 1)
    applicant = catalog.listings.open_jobs().items[1]
    assert (applicant.title, applicant.latest_version, [f.field_id for f in applicant.fields]) == (
        "Barista (part time)",
        2,
        [JOB.fields[0].field_id],
    )


def test_given_a_cursor_of_another_listing_or_filter_when_it_comes_back_then_it_is_refused(catalog: Catalog) -> None:
    created(catalog, "a", "b", "c")
    employers = catalog.listings.employer_jobs(limit=1).next_cursor
    open_only = catalog.listings.employer_jobs(JobStatus.OPEN, limit=1).next_cursor
    applicants = catalog.listings.open_jobs(limit=1).next_cursor

    with pytest.raises(InvalidCursor, match="another listing"):
        catalog.listings.open_jobs(cursor=employers)
    with pytest.raises(InvalidCursor, match="another listing"):
        catalog.listings.employer_jobs(cursor=applicants)
    with pytest.raises(InvalidCursor, match="another listing"):
        catalog.listings.employer_jobs(cursor=open_only)
    with pytest.raises(InvalidCursor, match="another listing"):
        catalog.listings.employer_jobs(JobStatus.CLOSED, cursor=open_only)


@pytest.mark.parametrize(
    "cursor",
    [
        "not-a-cursor",
        base64.urlsafe_b64encode(b'{"v":1}').decode().rstrip("="),
        encode_cursor("jobs:open", {"createdAt": "2026-04-01T09:01:00+00:00"}),
        encode_cursor("jobs:open", {"createdAt": "2026#1", "jobId": "a"}),
        encode_cursor("jobs:open", {"createdAt": "2026-04-01T09:01:00+00:00", "jobId": "../other"}),
        encode_cursor("jobs:open", {"createdAt": 2026, "jobId": "a"}),
        encode_cursor("jobs:open", {"createdAt": "x" * 65, "jobId": "a"}),
    ],
    ids=["garbled", "no position", "no job", "hash in time", "bad job id", "number", "too long"],
)
def test_given_a_garbled_or_hand_made_cursor_when_listing_then_it_is_refused(catalog: Catalog, cursor: str) -> None:
    with pytest.raises(InvalidCursor):
        catalog.listings.open_jobs(cursor=cursor)


def test_given_a_hand_made_cursor_in_the_listings_own_scope_then_it_only_moves_the_position(catalog: Catalog) -> None:
    created(catalog, "a", "b", "c")
    middle = catalog.listings.employer_jobs().items[1]
    position = {"createdAt": middle.created_at, "jobId": middle.job_id}

    after = catalog.listings.open_jobs(cursor=encode_cursor("jobs:open", position))

    assert ids(after.items) == ["a"]


def test_given_a_limit_outside_the_bounds_when_listing_then_it_is_held_to_them(catalog: Catalog) -> None:
    created(catalog, *(f"job-{n:03d}" for n in range(MAX_PAGE + 1)))

    assert len(catalog.listings.employer_jobs(limit=0).items) == 1
    assert len(catalog.listings.open_jobs(limit=MAX_PAGE + 50).items) == MAX_PAGE
