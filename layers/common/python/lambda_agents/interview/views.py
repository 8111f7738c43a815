"""The applicant's answers as response models: they are the OpenAPI contract and every answer
is validated against them (the employer's are in ``employer_views.py``).

Top-level keys are camelCase like the rest of the bundle's API; a field's own keys keep the
snake_case of the job's field definitions (``field_id``). The audit
(its summary and violations) is the employer's, never shown to the applicant: not in the
state, and not in the messages' additionalData, of which the applicant sees an allow-list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from ..response_model import ResponseModel, views_of
from .catalog.listings import JobListing, OpenJob
from .catalog.my_interviews import InterviewListing
from .catalog.notice import Notice, NoticeField
from .repository import StoredInterview
from .rules.models import AgentName, FieldStatus, InterviewSession, SessionStatus

if TYPE_CHECKING:  # the service brings the agent loop: the employer's views must not load it
    from .turn_runner import TurnResult

# additionalData an applicant's client shows; anything else (the audit) stays the employer's.
APPLICANT_DATA_KEYS = frozenset({"fieldId", "plan", "fieldsCompleted", "replyKind", "turnId", "usage", "correctionOf"})


class TokenUsage(ResponseModel):
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    total_tokens: int = Field(default=0, ge=0)


class ApplicationUsage(TokenUsage):
    """An application's model calls, summed over its turns (each turn's record is its assistant
    message's ``data.account``)."""

    cached_tokens: int = Field(default=0, ge=0, description="the part of promptTokens the prompt cache served")
    cost_usd: float | None = Field(
        default=None,
        description="at the price table's prices, every attempt included; null when a model had no price "
        "(or for turns taken before costs were recorded)",
    )


class ConsentView(ResponseModel):
    notice_id: str
    accepted_at: str


class InterviewCreated(ResponseModel):
    session_id: str
    job_id: str
    job_version: int
    status: SessionStatus
    current_agent: AgentName | None
    version: int
    notice: Notice = Field(description="Show it; the interview begins once the applicant consents to it")


class InterviewProgress(ResponseModel):
    """The answer to an applicant's action that runs no agent (consent, skip)."""

    session_id: str
    status: SessionStatus
    current_agent: AgentName | None
    current_field_id: str | None
    field_statuses: dict[str, FieldStatus]
    consent: ConsentView | None
    version: int


class TurnAnswer(ResponseModel):
    session_id: str
    reply: str
    reply_kind: Literal["question", "completed", "audit_failed", "retry", "declined"] = Field(
        description="question: the agents ask something; completed / audit_failed: the interview ended; "
        "retry / declined: a graceful reply, send a message to continue",
    )
    awaiting_user_response: bool
    current_agent: AgentName | None
    current_field_id: str | None
    status: SessionStatus
    field_statuses: dict[str, FieldStatus]
    usage: TokenUsage
    version: int


class FieldView(ResponseModel):
    # A job's field keeps the names the employer's job definition uses (``field_id``), not camelCase.
    field_id: str = Field(alias="field_id")
    label: str
    required: bool
    status: FieldStatus
    facts: dict[str, str]
    missing_facts: list[str] = Field(alias="missing_facts")


class ApplicantSettings(ResponseModel):
    language: str | None
    country: str | None
    timezone: str | None


class MessageView(ResponseModel):
    role: Literal["user", "assistant"]
    content: str
    agent: str | None
    created_at: str
    data: dict[str, Any] = Field(
        description="additionalData for display: an assistant message's fieldId, plan, fieldsCompleted, replyKind "
        "and usage; a user message's correctionOf (the field it corrected)"
    )


class InterviewDetail(ResponseModel):
    session_id: str
    job_id: str
    job_version: int
    status: SessionStatus
    current_agent: AgentName | None
    current_field_id: str | None
    state: ApplicantSettings
    plan: list[str]
    fields: list[FieldView]
    collected_facts: dict[str, dict[str, str]]
    notice: Notice
    consent: ConsentView | None
    messages: list[MessageView]
    usage_total: TokenUsage
    version: int
    created_at: str
    updated_at: str


class OpenJobView(ResponseModel):
    job_id: str = Field(description="Send it to POST /interviews")
    title: str
    latest_version: int = Field(description="The version a new interview starts from")
    fields: list[NoticeField] = Field(description="What the interview asks about, as its notice shows it")


class OpenJobList(ResponseModel):
    items: list[OpenJobView] = Field(description="Open jobs, newest first")
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next page")


def open_job_list(listing: JobListing[OpenJob]) -> OpenJobList:
    return OpenJobList(items=views_of(OpenJobView, listing.items), next_cursor=listing.next_cursor)


class InterviewSummaryView(ResponseModel):
    session_id: str = Field(description="Read it with GET /interviews/{sessionId}")
    job_id: str
    job_version: int
    job_title: str | None = Field(description="The job's title when the interview began")
    status: SessionStatus
    current_agent: AgentName | None
    consented: bool = Field(description="Whether the applicant accepted the interview's notice")
    created_at: str
    updated_at: str


class InterviewList(ResponseModel):
    items: list[InterviewSummaryView] = Field(description="The caller's interviews, newest first")
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next page")


def interview_list(listing: InterviewListing) -> InterviewList:
    return InterviewList(items=views_of(InterviewSummaryView, listing.items), next_cursor=listing.next_cursor)


def created_view(session: InterviewSession, notice: Notice) -> InterviewCreated:
    return InterviewCreated(
        session_id=session.session_id,
        job_id=session.job.job_id,
        job_version=session.job.version,
        status=session.state.status,
        current_agent=session.state.current_agent,
        version=session.version,
        notice=notice,
    )


def consent_view(session: InterviewSession) -> ConsentView | None:
    consent = session.state.consent
    return None if consent is None else ConsentView(notice_id=consent.notice_id, accepted_at=consent.accepted_at)


def progress_view(session: InterviewSession) -> InterviewProgress:
    state = session.state
    return InterviewProgress(
        session_id=session.session_id,
        status=state.status,
        current_agent=state.current_agent,
        current_field_id=state.current_field_id,
        field_statuses={field_id: FieldStatus(status) for field_id, status in state.field_statuses().items()},
        consent=consent_view(session),
        version=session.version,
    )


def field_views(session: InterviewSession) -> list[FieldView]:
    state = session.state
    views = []
    for field_id in state.plan or session.job.field_ids:
        definition = session.job.field(field_id)
        progress = state.fields[field_id]
        views.append(
            FieldView(
                field_id=field_id,
                label=definition.label,
                required=definition.required,
                status=progress.status,
                facts=dict(progress.facts),
                missing_facts=list(progress.missing_facts),
            )
        )
    return views


def turn_answer(result: TurnResult) -> dict[str, Any]:
    """The message route's answer to a turn, as a turn answered after its request stores it for
    its GET (``InterviewService.render_answer``)."""
    return turn_view(result).model_dump(by_alias=True, mode="json")


def turn_view(result: TurnResult) -> TurnAnswer:
    state = result.session.state
    return TurnAnswer(
        session_id=result.session.session_id,
        reply=result.outcome.reply,
        reply_kind=result.outcome.reply_kind,
        awaiting_user_response=result.outcome.awaiting_user_response,
        current_agent=state.current_agent,
        current_field_id=state.current_field_id,
        status=state.status,
        field_statuses={field_id: FieldStatus(status) for field_id, status in state.field_statuses().items()},
        usage=TokenUsage.model_validate(result.outcome.usage.as_dict()),
        version=result.session.version,
    )


def session_view(stored: StoredInterview, notice: Notice) -> InterviewDetail:
    session = stored.session
    state = session.state
    return InterviewDetail(
        session_id=session.session_id,
        job_id=session.job.job_id,
        job_version=session.job.version,
        status=state.status,
        current_agent=state.current_agent,
        current_field_id=state.current_field_id,
        state=ApplicantSettings.model_validate(state, from_attributes=True),
        plan=list(state.plan),
        fields=field_views(session),
        collected_facts=state.collected_facts(),
        notice=notice,
        consent=consent_view(session),
        messages=[
            MessageView(
                role=m.role,
                content=m.content,
                agent=m.agent,
                created_at=m.created_at,
                data={key: value for key, value in m.data.items() if key in APPLICANT_DATA_KEYS},
            )
            for m in stored.messages
        ],
        # The applicant's view shows tokens; the cost is the employer's (employer_views.ApplicationUsage).
        usage_total=TokenUsage.model_validate(
            {key: session.usage_total.get(key, 0) for key in ("promptTokens", "completionTokens", "totalTokens")}
        ),
        version=session.version,
        created_at=session.created_at,
        updated_at=session.updated_at,
    )


class TurnAcceptedView(ResponseModel):
    """202: the agents are answering after the request; read the reply at ``turnUrl`` (the ``Location``)."""

    status: Literal["pending"]
    session_id: str
    turn_id: str
    turn_url: str = Field(description="GET it for the reply: 200 when ready, 202 until then")
    retry_after_seconds: int = Field(ge=1, description="when to look first (Retry-After)")
    expected_seconds: int = Field(ge=0, description="how long the turn is expected to take")
