"""The employer's answers (jobs and applications) as response models: the OpenAPI contract of
the admin routes, every answer validated against them.

Unlike the applicant's view, an application shows everything the employer needs to decide:
the audit with its summary and violations, every message's additionalData, the applicant's id
and the job version the interview was run against.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..response_model import ResponseModel, views_of
from .catalog.applications import ApplicationPage
from .catalog.jobs import Job, JobStatus
from .catalog.listings import JobListing, JobSummary
from .repository import StoredInterview
from .rules.models import AuditRecord, FieldDefinition, SessionStatus
from .views import ApplicantSettings, ApplicationUsage, ConsentView, FieldView, consent_view, field_views


class JobView(ResponseModel):
    job_id: str
    version: int = Field(description="This version; every update makes a new one")
    status: JobStatus
    title: str
    fields: list[FieldDefinition]
    created_at: str
    updated_at: str
    closed_at: str | None


class JobSummaryView(ResponseModel):
    job_id: str
    title: str = Field(description="The latest version's title")
    status: JobStatus
    latest_version: int
    created_at: str
    updated_at: str = Field(description="The latest version, or the close")
    closed_at: str | None
    field_count: int = Field(description="The latest version's number of fields")


class JobList(ResponseModel):
    items: list[JobSummaryView] = Field(description="Newest first (by creation)")
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next page")


class ApplicationSummaryView(ResponseModel):
    application_id: str
    job_version: int
    status: SessionStatus
    consented_at: str
    created_at: str
    updated_at: str


class ApplicationList(ResponseModel):
    job_id: str
    items: list[ApplicationSummaryView]
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next page")


class TranscriptMessage(ResponseModel):
    role: Literal["user", "assistant"]
    content: str
    agent: str | None
    created_at: str
    data: dict[str, Any] = Field(description="The message's additionalData, the audit of the final turn included")


class ApplicationDetail(ResponseModel):
    application_id: str
    job_id: str
    job_version: int
    applicant_id: str = Field(description="The applicant's user id (Cognito sub)")
    status: SessionStatus
    state: ApplicantSettings
    fields: list[FieldView] = Field(description="In interview order, with the job version's labels")
    collected_facts: dict[str, dict[str, str]]
    audit: AuditRecord | None = Field(description="The Auditor's verdict, summary and violations; null until audited")
    consent: ConsentView | None
    messages: list[TranscriptMessage]
    usage_total: ApplicationUsage = Field(description="the application's tokens and their cost, summed over its turns")
    created_at: str
    updated_at: str


def job_view(job: Job) -> JobView:
    return JobView.model_validate(job, from_attributes=True)


def job_list(listing: JobListing[JobSummary]) -> JobList:
    return JobList(items=views_of(JobSummaryView, listing.items), next_cursor=listing.next_cursor)


def application_list(job_id: str, page: ApplicationPage) -> ApplicationList:
    return ApplicationList(
        job_id=job_id, items=views_of(ApplicationSummaryView, page.items), next_cursor=page.next_cursor
    )


def application_detail(stored: StoredInterview) -> ApplicationDetail:
    session = stored.session
    state = session.state
    return ApplicationDetail(
        application_id=session.session_id,
        job_id=session.job.job_id,
        job_version=session.job.version,
        applicant_id=session.user_id,
        status=state.status,
        state=ApplicantSettings.model_validate(state, from_attributes=True),
        fields=field_views(session),
        collected_facts=state.collected_facts(),
        audit=state.audit,
        consent=consent_view(session),
        messages=views_of(TranscriptMessage, stored.messages),
        usage_total=ApplicationUsage.model_validate(session.usage_total),
        created_at=session.created_at,
        updated_at=session.updated_at,
    )
