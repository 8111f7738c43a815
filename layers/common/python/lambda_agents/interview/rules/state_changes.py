"""StateChange (docs/interview.md#state-changes) and the one reducer that applies it.

The orchestrator returns a list of changes and the API layer persists them; both sides apply
them with ``apply_change``, so the state the agents worked on and the state that is stored
cannot differ. The reducer is also where the interview's invariants live in code
(docs/interview.md#invariants):

- a field moves pending -> interviewing -> reviewing -> done, or reviewing -> interviewing on
  feedback; any other move raises ``InvariantViolation``;
- a field becomes done only through a Reviewer pass (``RecordReview`` with ``passed``), which
  is the only change that may set ``done``;
- the plan is a permutation of the job's fields, set once;
- ``FinishInterview(completed)`` requires every required field done and a passed audit;
  ``FinishInterview(audit_failed)`` requires a failed audit; nothing changes a finished state
  except the two messages of the turn that finished it and an applicant's correction;
- nothing at all applies before the applicant has consented to the notice (``RecordConsent``),
  messages included, and consent is given once;
- the applicant's own actions, never a tool: ``SkipField`` settles an optional field that is
  not done (skipped, its facts dropped); ``ReopenField`` takes a done or skipped field back to
  interviewing with its facts and the last audit dropped, the interview back in progress, the
  applicant's correction the answer the Reviewer reviews next (so it is reviewed and the whole
  interview audited again before it can complete).

The first six types (language, country, time zone, current agent, the applicant's and the
assistant's messages) carry the greeting and the transcript; the others (plan, fields, facts,
reviews, the audit, the end, consent, skip, reopen) persist the rest of the state.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from .models import (
    MAX_FACTS_PER_FIELD,
    AgentName,
    AuditRecord,
    Consent,
    FieldProgress,
    FieldStatus,
    InterviewState,
    JobDefinition,
    SessionStatus,
)


class InvariantViolation(RuntimeError):
    """A change that the interview's invariants forbid: a bug in the caller, never applied."""


@dataclass(frozen=True)
class SetLanguage:
    type: ClassVar[str] = "SET_LANGUAGE"
    language: str


@dataclass(frozen=True)
class SetCountry:
    type: ClassVar[str] = "SET_COUNTRY"
    country: str


@dataclass(frozen=True)
class SetTimezone:
    type: ClassVar[str] = "SET_TIMEZONE"
    timezone: str
    source: str  # "stated" | "country" | "fallback"


@dataclass(frozen=True)
class SetCurrentAgent:
    type: ClassVar[str] = "SET_CURRENT_AGENT"
    agent: AgentName | None


@dataclass(frozen=True)
class AddUserMessage:
    type: ClassVar[str] = "ADD_USER_MESSAGE"
    content: str


@dataclass(frozen=True)
class AddAssistantMessage:
    type: ClassVar[str] = "ADD_ASSISTANT_MESSAGE"
    content: str
    agent: str | None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SetPlan:
    type: ClassVar[str] = "SET_PLAN"
    field_ids: tuple[str, ...]


@dataclass(frozen=True)
class SetCurrentField:
    type: ClassVar[str] = "SET_CURRENT_FIELD"
    field_id: str | None


@dataclass(frozen=True)
class SetFieldStatus:
    type: ClassVar[str] = "SET_FIELD_STATUS"
    field_id: str
    status: FieldStatus


@dataclass(frozen=True)
class AddFacts:
    type: ClassVar[str] = "ADD_FACTS"
    field_id: str
    facts: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class RecordReview:
    """The Reviewer's verdict on the field under review: done when passed, back to interviewing otherwise."""

    type: ClassVar[str] = "RECORD_REVIEW"
    field_id: str
    passed: bool
    feedback: str
    missing_facts: tuple[str, ...]


@dataclass(frozen=True)
class SetAskedField:
    type: ClassVar[str] = "SET_ASKED_FIELD"
    field_id: str | None


@dataclass(frozen=True)
class SetAudit:
    type: ClassVar[str] = "SET_AUDIT"
    audit: AuditRecord


@dataclass(frozen=True)
class FinishInterview:
    type: ClassVar[str] = "FINISH_INTERVIEW"
    status: SessionStatus


@dataclass(frozen=True)
class RecordConsent:
    """The applicant accepted the notice ``notice_id``: the interview may begin."""

    type: ClassVar[str] = "RECORD_CONSENT"
    notice_id: str
    accepted_at: str


@dataclass(frozen=True)
class SkipField:
    """The applicant skips an optional field that is not done yet."""

    type: ClassVar[str] = "SKIP_FIELD"
    field_id: str


@dataclass(frozen=True)
class ReopenField:
    """The applicant corrects a done or skipped field: it is interviewed, reviewed and audited again."""

    type: ClassVar[str] = "REOPEN_FIELD"
    field_id: str


StateChange = (
    SetLanguage
    | SetCountry
    | SetTimezone
    | SetCurrentAgent
    | AddUserMessage
    | AddAssistantMessage
    | SetPlan
    | SetCurrentField
    | SetFieldStatus
    | AddFacts
    | RecordReview
    | SetAskedField
    | SetAudit
    | FinishInterview
    | RecordConsent
    | SkipField
    | ReopenField
)

_MOVES = {
    (FieldStatus.PENDING, FieldStatus.INTERVIEWING),
    (FieldStatus.INTERVIEWING, FieldStatus.REVIEWING),
    (FieldStatus.REVIEWING, FieldStatus.INTERVIEWING),
}


def describe(change: StateChange) -> dict[str, Any]:
    """A StateChange as ``{type, payload}`` (for logs of types only, and tests)."""
    payload = asdict(change)
    return {"type": change.type, "payload": payload}


def apply_change(state: InterviewState, change: StateChange, job: JobDefinition) -> InterviewState:
    """A new state with ``change`` applied, or ``InvariantViolation``; ``state`` is not modified."""
    if isinstance(change, RecordConsent):
        if state.consent is not None:
            raise InvariantViolation("RECORD_CONSENT: the applicant has already consented")
        return state.model_copy(update={"consent": Consent(notice_id=change.notice_id, accepted_at=change.accepted_at)})
    if state.consent is None:
        raise InvariantViolation(f"{change.type}: the applicant has not consented to the notice")
    if isinstance(change, (AddUserMessage, AddAssistantMessage)):
        return state
    if isinstance(change, ReopenField):
        return _reopened(state, change.field_id)
    if state.finished:
        raise InvariantViolation(f"{change.type}: the interview is already {state.status.value}")
    new = state.model_copy(deep=True)
    match change:
        case SetLanguage(language=language):
            new.language = language
        case SetCountry(country=country):
            new.country = country
        case SetTimezone(timezone=timezone):
            new.timezone = timezone
        case SetCurrentAgent(agent=agent):
            new.current_agent = agent
        case SetPlan(field_ids=field_ids):
            if state.plan:
                raise InvariantViolation("SET_PLAN: the plan is already set")
            if sorted(field_ids) != sorted(job.field_ids):
                raise InvariantViolation("SET_PLAN: the plan must list every field of the job exactly once")
            new.plan = list(field_ids)
        case SetCurrentField(field_id=field_id):
            _check_current_field(state, field_id)
            new.current_field_id = field_id
        case SetFieldStatus(field_id=field_id, status=status):
            progress = _progress(new, field_id, change.type)
            if (progress.status, status) not in _MOVES:
                raise InvariantViolation(
                    f"SET_FIELD_STATUS: {field_id} cannot move {progress.status.value} -> {status.value}"
                    + (" (only a Reviewer pass marks a field done)" if status is FieldStatus.DONE else "")
                )
            progress.status = status
        case AddFacts(field_id=field_id, facts=facts):
            progress = _progress(new, field_id, change.type)
            merged = {**progress.facts, **dict(facts)}
            if len(merged) > MAX_FACTS_PER_FIELD:
                raise InvariantViolation(f"ADD_FACTS: {field_id} would hold more than {MAX_FACTS_PER_FIELD} facts")
            progress.facts = merged
        case RecordReview(field_id=field_id, passed=passed, feedback=feedback, missing_facts=missing):
            progress = _progress(new, field_id, change.type)
            if progress.status is not FieldStatus.REVIEWING:
                raise InvariantViolation(f"RECORD_REVIEW: {field_id} is {progress.status.value}, not under review")
            progress.status = FieldStatus.DONE if passed else FieldStatus.INTERVIEWING
            progress.feedback = feedback
            progress.missing_facts = list(missing)
            progress.reviews += 1
        case SetAskedField(field_id=field_id):
            if field_id is not None and field_id != state.current_field_id:
                raise InvariantViolation(f"SET_ASKED_FIELD: {field_id} is not the current field")
            new.asked_field_id = field_id
        case SetAudit(audit=audit):
            if not state.every_field_settled:
                raise InvariantViolation("SET_AUDIT: the Auditor runs only after every field is done")
            new.audit = audit
        case FinishInterview(status=status):
            _check_finish(state, status, job)
            new.status = status
            new.current_agent = None  # the workflow ends: no agent follows the audit
        case SkipField(field_id=field_id):
            progress = _progress(new, field_id, change.type)
            if job.field(field_id).required:
                raise InvariantViolation(f"SKIP_FIELD: {field_id} is required")
            if progress.status not in (FieldStatus.PENDING, FieldStatus.INTERVIEWING):
                raise InvariantViolation(f"SKIP_FIELD: {field_id} is {progress.status.value}")
            _clear(progress, FieldStatus.SKIPPED)
            if new.current_field_id == field_id:
                new.current_field_id = None  # the next turn puts the next unsettled field under interview
            if new.asked_field_id == field_id:
                new.asked_field_id = None
    return new


def apply_changes(state: InterviewState, changes: list[StateChange], job: JobDefinition) -> InterviewState:
    for change in changes:
        state = apply_change(state, change, job)
    return state


def _reopened(state: InterviewState, field_id: str) -> InterviewState:
    new = state.model_copy(deep=True)
    progress = _progress(new, field_id, ReopenField.type)
    if not progress.status.settled:
        raise InvariantViolation(f"REOPEN_FIELD: {field_id} is {progress.status.value}, not done or skipped")
    if not state.plan:
        # Skipped before the Interviewer began: it is simply interviewed in its turn.
        _clear(progress, FieldStatus.PENDING)
        return new
    _clear(progress, FieldStatus.INTERVIEWING)
    new.current_field_id = field_id
    new.asked_field_id = field_id  # the applicant's correction is the answer the Reviewer sees next
    new.audit = None
    new.status = SessionStatus.IN_PROGRESS
    new.current_agent = AgentName.INTERVIEWER
    return new


def _clear(progress: FieldProgress, status: FieldStatus) -> None:
    progress.status = status
    progress.facts = {}
    progress.missing_facts = []
    progress.feedback = ""


def _progress(state: InterviewState, field_id: str, change_type: str) -> FieldProgress:
    if field_id not in state.fields:
        raise InvariantViolation(f"{change_type}: unknown field {field_id!r}")
    return state.fields[field_id]


def _check_current_field(state: InterviewState, field_id: str | None) -> None:
    if field_id is None:
        if state.plan and not state.every_field_settled:
            raise InvariantViolation("SET_CURRENT_FIELD: fields remain, the current field cannot be cleared")
        return
    if field_id not in state.plan:
        raise InvariantViolation(f"SET_CURRENT_FIELD: {field_id!r} is not in the plan")
    if state.fields[field_id].status.settled:
        raise InvariantViolation(f"SET_CURRENT_FIELD: {field_id!r} is already {state.fields[field_id].status.value}")
    current = state.current_field_id
    if current is not None and current != field_id and not state.fields[current].status.settled:
        raise InvariantViolation(f"SET_CURRENT_FIELD: {current!r} is not done; a field advances only after review")


def _check_finish(state: InterviewState, status: SessionStatus, job: JobDefinition) -> None:
    if status is SessionStatus.COMPLETED:
        undone = [
            field.field_id
            for field in job.fields
            if field.required and state.fields[field.field_id].status is not FieldStatus.DONE
        ]
        if undone:
            raise InvariantViolation(f"FINISH_INTERVIEW: required fields not done: {', '.join(undone)}")
        if state.audit is None or not state.audit.passed:
            raise InvariantViolation("FINISH_INTERVIEW: the application completes only after a passed audit")
    elif status is SessionStatus.AUDIT_FAILED:
        if state.audit is None or state.audit.passed:
            raise InvariantViolation("FINISH_INTERVIEW: audit_failed needs a failed audit")
    else:
        raise InvariantViolation(f"FINISH_INTERVIEW: {status.value} is not an end state")
