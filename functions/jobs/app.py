"""JobsFunction: the employer's side of the interview (docs/interview.md#job-catalog): the job catalog and the
applications of each job. IAM routes (SigV4-signed, like every ``/api/admin/...`` route).

- ``GET /api/admin/jobs?status=&limit=&cursor=`` -> the catalog: every job's summary (status,
  latest version, times, number of fields), newest first, paged (``interview/catalog/listings.py``).
- ``POST /api/admin/jobs`` ``{jobId?, title, fields}`` -> 201, version 1, open.
- ``GET /api/admin/jobs/{jobId}[?version=n]`` -> the latest version (or the given one).
- ``PUT /api/admin/jobs/{jobId}`` ``{title, fields}`` -> a new version; interviews already
  started keep theirs. 409 ``JOB_CLOSED`` on a closed job, ``JOB_CHANGED`` on a race.
- ``POST /api/admin/jobs/{jobId}/close`` -> closed: no new interview starts, running ones finish.
- ``GET /api/admin/jobs/{jobId}/applications?status=&limit=&cursor=`` -> consented applications,
  newest first, paged.
- ``GET /api/admin/jobs/{jobId}/applications/{applicationId}`` -> one application with its
  facts, the audit (summary and violations) and the whole transcript.

A separate function from InterviewFunction because its callers are another kind of identity
(one resolver checks one kind: IAM here, Cognito there), it needs no model (no openai at cold
start, no key), and its permissions differ: it writes jobs and reads applications, while the
applicant's function writes interviews and publishes events.

Environment: INTERVIEWS_TABLE (jobs and interviews share it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from lambda_agents.api.identity import caller_admin_arn
from lambda_agents.api.resolver import build_resolver
from lambda_agents.composition import CompositionRoot
from lambda_agents.config import load_settings
from lambda_agents.interview.catalog.applications import MAX_PAGE, EmployerApplications
from lambda_agents.interview.catalog.jobs import JOB_ID_MAX_CHARS, JOB_ID_PATTERN, JobService, JobStatus
from lambda_agents.interview.catalog.listings import DEFAULT_PAGE, JobListings
from lambda_agents.interview.catalog.listings import MAX_PAGE as JOBS_PAGE_MAX
from lambda_agents.interview.employer_views import (
    ApplicationDetail,
    ApplicationList,
    JobList,
    JobView,
    application_detail,
    application_list,
    job_list,
    job_view,
)
from lambda_agents.interview.requests import JobCreateBody, JobUpdateBody
from lambda_agents.interview.rules.models import SESSION_ID_PATTERN, SessionStatus
from lambda_agents.observability import logger, metrics
from lambda_agents.paging import CURSOR_MAX_CHARS, CURSOR_PATTERN
from lambda_agents.storage.interview_listings import DynamoApplicationIndex
from lambda_agents.storage.interviews import DynamoInterviewRepository
from lambda_agents.storage.jobs import DynamoJobCatalog, DynamoJobRepository
from pydantic import BaseModel, ConfigDict, Field

JobId = Annotated[
    str, Path(pattern=JOB_ID_PATTERN, max_length=JOB_ID_MAX_CHARS, description="the job's id (POST /api/admin/jobs)")
]
ApplicationId = Annotated[
    str, Path(pattern=SESSION_ID_PATTERN, max_length=32, description="the application's id (its interview's id)")
]

VersionQuery = Annotated[int | None, Query(ge=1, le=100_000, description="A past version; the latest when absent")]
StatusQuery = Annotated[SessionStatus | None, Query(description="Only applications in this status")]
LimitQuery = Annotated[int | None, Query(ge=1, le=MAX_PAGE, description="Page size (default 20)")]
CursorQuery = Annotated[str | None, Query(min_length=1, max_length=200, description="The previous page's nextCursor")]
JobStatusQuery = Annotated[JobStatus | None, Query(description="Only jobs in this status")]
JobsLimitQuery = Annotated[int, Query(ge=1, le=JOBS_PAGE_MAX, description=f"Page size (default {DEFAULT_PAGE})")]
JobsCursorQuery = Annotated[
    str | None,
    Query(pattern=CURSOR_PATTERN, max_length=CURSOR_MAX_CHARS, description="The previous page's nextCursor"),
]


class JobsSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    interviews_table: str = Field(alias="INTERVIEWS_TABLE", min_length=1)


@dataclass(frozen=True)
class Dependencies:
    jobs: JobService
    listings: JobListings
    applications: EmployerApplications


def bootstrap(*, settings: JobsSettings | None = None) -> Dependencies:
    """The function's composition root (``lambda_agents.composition``)."""
    table = (settings or load_settings(JobsSettings)).interviews_table
    jobs = JobService(DynamoJobRepository(table))
    return Dependencies(
        jobs=jobs,
        listings=JobListings(DynamoJobCatalog(table)),
        applications=EmployerApplications(DynamoApplicationIndex(table), DynamoInterviewRepository(table), jobs),
    )


dependencies = CompositionRoot(bootstrap)


app: APIGatewayRestResolver = build_resolver(auth="iam")


def _admin() -> str:
    return caller_admin_arn(app.current_event.raw_event)


@app.get("/api/admin/jobs", summary="The job catalog, newest first")  # type: ignore[untyped-decorator]
def list_jobs(
    status: JobStatusQuery = None, limit: JobsLimitQuery = DEFAULT_PAGE, cursor: JobsCursorQuery = None
) -> JobList:
    _admin()
    return job_list(dependencies().listings.employer_jobs(status, limit, cursor))


@app.post("/api/admin/jobs", status_code=201, summary="Create a job (version 1, open)")  # type: ignore[untyped-decorator]
def create_job(body: JobCreateBody) -> JobView:
    job = dependencies().jobs.create(body.draft(), _admin(), body.job_id)
    logger.info("job created", extra={"jobId": job.job_id, "fields": len(job.fields)})
    metrics.add_metric(name="JobsCreated", unit=MetricUnit.Count, value=1)
    return job_view(job)


@app.get("/api/admin/jobs/<jobId>", summary="A job: its latest version, or the given one")  # type: ignore[untyped-decorator]
def get_job(jobId: JobId, version: VersionQuery = None) -> JobView:  # noqa: N803 - the route's name
    _admin()
    return job_view(dependencies().jobs.get(jobId, version))


@app.put("/api/admin/jobs/<jobId>", summary="A new version of an open job")  # type: ignore[untyped-decorator]
def update_job(jobId: JobId, body: JobUpdateBody) -> JobView:  # noqa: N803 - the route's name
    job = dependencies().jobs.update(jobId, body.draft(), _admin())
    logger.info("job versioned", extra={"jobId": job.job_id, "version": job.version})
    return job_view(job)


@app.post("/api/admin/jobs/<jobId>/close", summary="Close a job: it starts no new interview")  # type: ignore[untyped-decorator]
def close_job(jobId: JobId) -> JobView:  # noqa: N803 - the route's name
    _admin()
    job = dependencies().jobs.close(jobId)
    logger.info("job closed", extra={"jobId": job.job_id})
    return job_view(job)


@app.get("/api/admin/jobs/<jobId>/applications", summary="A job's applications, newest first")  # type: ignore[untyped-decorator]
def list_applications(
    jobId: JobId,  # noqa: N803 - the route's name
    status: StatusQuery = None,
    limit: LimitQuery = None,
    cursor: CursorQuery = None,
) -> ApplicationList:
    _admin()
    job_id = jobId
    page = dependencies().applications.list(job_id, status, limit or 20, cursor)
    return application_list(job_id, page)


@app.get(  # type: ignore[untyped-decorator]
    "/api/admin/jobs/<jobId>/applications/<applicationId>",
    summary="One application: facts, audit and transcript",
)
def get_application(jobId: JobId, applicationId: ApplicationId) -> ApplicationDetail:  # noqa: N803 - the route's names
    _admin()
    job_id = jobId
    stored = dependencies().applications.get(job_id, applicationId)
    logger.info("application read", extra={"jobId": job_id, "applicationId": applicationId})
    return application_detail(stored)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    metrics.add_metric(name="JobsRequests", unit=MetricUnit.Count, value=1)
    return app.resolve(event, context)
