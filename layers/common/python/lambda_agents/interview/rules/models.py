"""Stored types of an interview (docs/interview.md), kept apart from the tools' input schemas
(docs/engine.md#ai-input-schemas).

A job's field definitions come from the employer's job catalog (``jobs.py``): a session keeps
the version it started from, so a later version of the job never changes a running interview. The state is what
the agents change, through ``StateChange``s only (``state_changes.py``); it is one DynamoDB item,
so every list and text in it is bounded here (Japanese text is 3 bytes a character: the bounds
keep the item well under DynamoDB's 400 KB even at the maximum).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, field_validator

MAX_FIELDS = 20
MAX_REQUIRED_FACTS = 10
MAX_FACTS_PER_FIELD = 10
MAX_FACT_NAME_CHARS = 100
MAX_FACT_VALUE_CHARS = 300
MAX_FEEDBACK_CHARS = 1000
MAX_SUMMARY_CHARS = 4000
MAX_VIOLATIONS = 20
MAX_MESSAGE_CHARS = 4000
FIELD_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
# The caller's own job id: echoed in answers and logs, so it has a shape and a length.
SESSION_ID_PATTERN = r"^[0-9a-f]{32}$"


def _trimmed_not_blank(value: str) -> str:
    """Trimmed after the length check: the API's documented maxLength applies to what was sent."""
    trimmed = value.strip()
    if not trimmed:
        raise ValueError("must not be blank")
    return trimmed


FieldId = Annotated[str, StringConstraints(pattern=FIELD_ID_PATTERN, max_length=64)]
FactName = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_FACT_NAME_CHARS), AfterValidator(_trimmed_not_blank)
]
Label = Annotated[str, StringConstraints(min_length=1, max_length=200), AfterValidator(_trimmed_not_blank)]
Description = Annotated[str, StringConstraints(min_length=1, max_length=1000), AfterValidator(_trimmed_not_blank)]


class FieldDefinition(BaseModel):
    """One field of the job's application form (the API's input, stored as given)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    field_id: FieldId
    label: Label
    intent: Description
    required: bool = Field(strict=True)  # JSON true/false only: 0 or "no" is not a flag
    required_facts: list[FactName] = Field(max_length=MAX_REQUIRED_FACTS)
    done_criteria: Description

    @field_validator("required_facts")
    @classmethod
    def _distinct_facts(cls, facts: list[str]) -> list[str]:
        seen: set[str] = set()
        for fact in facts:
            if fact.casefold() in seen:
                raise ValueError(f"required fact {fact!r} is listed twice")
            seen.add(fact.casefold())
        return facts


class JobDefinition(BaseModel):
    """The job an applicant applies for: its id, the version of its definition the interview
    started from, its title and its form's fields, in the job's order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    job_id: str = Field(min_length=1, max_length=128)
    version: int = Field(default=1, ge=1)
    title: str = ""
    fields: list[FieldDefinition] = Field(min_length=1, max_length=MAX_FIELDS)

    @field_validator("fields")
    @classmethod
    def _distinct_ids(cls, fields: list[FieldDefinition]) -> list[FieldDefinition]:
        seen: set[str] = set()
        for field in fields:
            if field.field_id in seen:
                raise ValueError(f"field_id {field.field_id!r} is defined twice")
            seen.add(field.field_id)
        return fields

    def field(self, field_id: str) -> FieldDefinition:
        for field in self.fields:
            if field.field_id == field_id:
                return field
        raise KeyError(field_id)

    @property
    def field_ids(self) -> list[str]:
        return [field.field_id for field in self.fields]


class AgentName(StrEnum):
    """The agents that hold the conversation (``currentAgent``); sub-agents run inside tools."""

    GREETER = "greeter"
    ARCHITECT = "architect"
    INTERVIEWER = "interviewer"

    @property
    def purpose(self) -> str:
        """What its model calls are billed and recorded under (``llm.accounting``, ``paid_calls``)."""
        return f"interview.{self.value}"


class SubAgentName(StrEnum):
    REVIEWER = "reviewer"
    QUICK_CHECK = "quick_check"
    AUDITOR = "auditor"


class FieldStatus(StrEnum):
    """pending -> interviewing -> reviewing -> done, and reviewing -> interviewing on feedback.

    The applicant's own actions add two moves: an optional field that is not done may be
    skipped, and a done or skipped field may be reopened for a correction (back to interviewing).
    """

    PENDING = "pending"
    INTERVIEWING = "interviewing"
    REVIEWING = "reviewing"
    DONE = "done"
    SKIPPED = "skipped"

    @property
    def settled(self) -> bool:
        """Nothing more to ask about it: reviewed and passed, or skipped by the applicant."""
        return self in (FieldStatus.DONE, FieldStatus.SKIPPED)


class SessionStatus(StrEnum):
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"  # every required field done and the audit passed
    AUDIT_FAILED = "audit_failed"  # the audit found an error: the application goes to a person, not completed


class FieldProgress(BaseModel):
    """Where one field stands, with the facts collected for it and the last review's verdict."""

    model_config = ConfigDict(extra="forbid")

    field_id: str
    status: FieldStatus = FieldStatus.PENDING
    facts: dict[str, str] = Field(default_factory=dict)
    missing_facts: list[str] = Field(default_factory=list)
    feedback: str = ""
    reviews: int = 0


class AuditViolation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str
    message: str
    severity: Literal["error", "warning"]


class AuditRecord(BaseModel):
    """The Auditor's verdict as stored (null violations become an empty list)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    passed: bool
    violations: list[AuditViolation] = Field(default_factory=list)
    summary: str


class Consent(BaseModel):
    """The applicant's consent to the notice (what is collected, who reads it, how long it is kept)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    notice_id: str
    accepted_at: str


class InterviewState(BaseModel):
    """Everything the agents decide; sections and remaining tasks are derived from it."""

    model_config = ConfigDict(extra="forbid")

    language: str | None = None
    country: str | None = None
    timezone: str | None = None
    current_agent: AgentName | None = AgentName.GREETER
    plan: list[str] = Field(default_factory=list)
    fields: dict[str, FieldProgress] = Field(default_factory=dict)
    current_field_id: str | None = None
    asked_field_id: str | None = None  # the Interviewer's open question: the next applicant message answers it
    audit: AuditRecord | None = None
    status: SessionStatus = SessionStatus.IN_PROGRESS
    consent: Consent | None = None  # nothing of the interview proceeds before it (the reducer checks)

    @classmethod
    def initial(cls, job: JobDefinition) -> InterviewState:
        return cls(fields={field.field_id: FieldProgress(field_id=field.field_id) for field in job.fields})

    @property
    def finished(self) -> bool:
        return self.status is not SessionStatus.IN_PROGRESS

    @property
    def every_field_settled(self) -> bool:
        """Every field of the plan settled (done, or skipped by the applicant); False before a plan.
        The one statement of it: the Interviewer's flow and the reducer's invariants both ask here."""
        return bool(self.plan) and all(self.fields[field_id].status.settled for field_id in self.plan)

    def field_statuses(self) -> dict[str, str]:
        order = self.plan or list(self.fields)
        return {field_id: self.fields[field_id].status.value for field_id in order}

    def collected_facts(self) -> dict[str, dict[str, str]]:
        return {field_id: dict(progress.facts) for field_id, progress in self.fields.items() if progress.facts}


class ChatMessage(BaseModel):
    """One message of the transcript. ``data`` is its additionalData (docs/engine.md#additional-data):
    what the turn's tools produced that a client shows or the next turn needs (never intermediate
    tool results)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seq: int = Field(ge=0)
    role: Literal["user", "assistant"]
    content: str
    agent: str | None = None
    created_at: str
    data: dict[str, Any] = Field(default_factory=dict)


class InterviewSession(BaseModel):
    """The session item: owner, state and the version that guards every turn's write."""

    model_config = ConfigDict(extra="forbid")

    session_id: str
    user_id: str
    job: JobDefinition
    state: InterviewState
    version: int = Field(ge=0)
    message_count: int = Field(ge=0)
    # Tokens summed over the turns, and their cost (costUsd, None once a model had no price).
    usage_total: dict[str, int | float | None] = Field(default_factory=dict)
    created_at: str
    updated_at: str
