"""InterviewFunction: the applicant's side of the job-application interview (docs/interview.md). Cognito
user routes; the employer's side (jobs, applications) is JobsFunction.

- ``GET /jobs?limit=&cursor=`` -> the open jobs, newest first, each with its title, latest version
  and fields as the notice shows them (label, required); closed jobs never appear.
- ``GET /interviews?limit=&cursor=`` -> the caller's own interviews, newest first, each a summary
  (job, version and title, status, current agent, times, whether consent was given); never another
  user's, never the audit, never one whose withdrawal has begun.
- ``POST /interviews`` ``{jobId}`` -> 201 ``{sessionId, jobVersion, notice, ...}``: an interview of
  the latest version of an open job, its fields read from the job catalog; no model call.
- ``POST /interviews/{sessionId}/consent`` ``{accepted: true, noticeId}``: the notice accepted
  (what is collected, who reads it, retention); nothing else runs before it (409 CONSENT_REQUIRED).
- ``POST /interviews/{sessionId}/messages`` ``{text}`` -> the reply, ``awaitingUserResponse``,
  the current agent and field, the field statuses, the turn's token usage.
- ``POST /interviews/{sessionId}/fields/{fieldId}/correction`` ``{text}``: a corrected answer to a
  done or skipped field, reviewed in this turn; the interview is audited again at the end.
- ``POST /interviews/{sessionId}/fields/{fieldId}/skip``: an optional field not answered yet.
- ``GET /interviews/{sessionId}`` -> state, field statuses, facts, the notice, the transcript;
  never the audit's summary or violations (those are the employer's).
- ``DELETE /interviews/{sessionId}`` -> 204: the application withdrawn, everything stored for it
  deleted (items, RunSteps, retry records, pending events).

A session belongs to the user who created it (the Cognito ``sub`` from the request context);
another user's session and an unknown one are the same 404; an id that is not 32 lower-case hex
digits is a 400 before anything is read, as every malformed path value of the API. Every route needs
an identity: without one the answer is 401 before anything else is looked at.

Idempotency: an ``Idempotency-Key`` header (optional; 1-128 of ``A-Z a-z 0-9 - _ . :``) makes
a message or a correction safe to retry: the same key, user and session (and field) return the
first answer without running the agents again (Powertools idempotency on IDEMPOTENCY_TABLE,
24 h; the record's id is stored with the turn, so a withdrawal deletes it). A failed answer
(409, 503, ...) is not kept, so a retry runs again, and neither is a 202 once the worker gave its
turn up (the retry runs the turn again); the same key with a different text is a
409 ``IDEMPOTENCY_KEY_REUSED``; while the first request still runs, 409 ``REQUEST_IN_PROGRESS``.

Errors (each names its answer, ``lambda_agents.interview.errors``): 409 ``VERSION_CONFLICT`` when
another change to the same session was stored first (nothing of this one was written: send it again),
``INTERVIEW_FINISHED``, ``TURN_LIMIT``, ``CONSENT_REQUIRED``, ``JOB_CLOSED``; 503
``MODEL_UNAVAILABLE`` (Retry-After) when the model provider keeps failing or the invocation's time
runs out before anything of the turn succeeded, 503 when
DynamoDB throttles, with nothing of the turn written; 502 ``MODEL_ERROR`` when the provider rejects
the request (the resolver's one mapping of model failures).

Time: the turn's deadline is API Gateway's 29 s from when it received the request, or the
Lambda's remaining time if earlier, less 3 s to store (``api.time_budget``). A turn expected not to
fit in it (this container's turn times, or the model's pace), one sent with ``Prefer:
respond-async``, and one the deadline cuts anyway are handed to InterviewTurnFunction: 202 with the
turn's ``Location`` (``GET /interviews/{sessionId}/turns/{turnId}``: the reply, 202 while it runs);
nothing of the turn is committed in the request (``lambda_agents.interview.pending_turns``).
Without INTERVIEW_TURNS_QUEUE_URL a turn cut short ends with a graceful reply and is stored once.

A turn that finishes the interview publishes ``Application Completed`` / ``Application Audit
Failed`` to APPLICATION_EVENT_BUS after its commit, from an outbox written in the same
transaction (ApplicationEventsRelayFunction publishes what could not be).

Environment: INTERVIEWS_TABLE, IDEMPOTENCY_TABLE, APPLICATION_EVENT_BUS, INTERVIEW_TTL_DAYS
(90), RUN_STEP_TTL_DAYS (7), INTERVIEW_MAX_ITERATIONS (10 model calls per applicant turn),
INTERVIEW_MAX_TURNS (100), and the LLM settings (AI_AGENT_MODE, OPENAI_*).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from lambda_agents.answered_later import TurnAccepted
from lambda_agents.api.idempotency import IdempotencyKey, IdempotentCall
from lambda_agents.api.identity import caller_user_id
from lambda_agents.api.prefer import PreferHeader
from lambda_agents.api.resolver import build_resolver, domain_error_answer, spending_user_tokens
from lambda_agents.api.time_budget import request_deadline
from lambda_agents.api.turn_routes import TurnRoutes, accepted_turn_ended
from lambda_agents.bootstrap.interview import InterviewSettings, interview_service
from lambda_agents.composition import CompositionRoot
from lambda_agents.config import LLMSettings, load_settings
from lambda_agents.interview.catalog.listings import DEFAULT_PAGE, MAX_PAGE, JobListings
from lambda_agents.interview.catalog.my_interviews import MyInterviews
from lambda_agents.interview.errors import VersionConflict
from lambda_agents.interview.pending_turns import TURN_ID_PATTERN
from lambda_agents.interview.requests import ConsentBody, CreateInterviewBody, MessageBody
from lambda_agents.interview.rules.models import FIELD_ID_PATTERN, SESSION_ID_PATTERN
from lambda_agents.interview.service import InterviewService, TurnOptions
from lambda_agents.interview.turn_runner import TurnResult
from lambda_agents.interview.views import (
    InterviewCreated,
    InterviewDetail,
    InterviewList,
    InterviewProgress,
    OpenJobList,
    TurnAcceptedView,
    TurnAnswer,
    created_view,
    interview_list,
    open_job_list,
    progress_view,
    session_view,
    turn_view,
)
from lambda_agents.live import emit_push_counts
from lambda_agents.llm import Deadline
from lambda_agents.llm.accounting import cost_of
from lambda_agents.llm.types import ChatModel
from lambda_agents.observability import logger, metrics
from lambda_agents.paging import CURSOR_MAX_CHARS, CURSOR_PATTERN
from lambda_agents.storage.interview_listings import DynamoApplicantInterviews
from lambda_agents.storage.jobs import DynamoJobCatalog

IDEMPOTENCY_SECONDS = 24 * 3600


@dataclass(frozen=True)
class Dependencies:
    settings: InterviewSettings
    service: InterviewService
    model: ChatModel  # the model the agents call (tests and the demo read its calls)
    listings: JobListings
    mine: MyInterviews
    run_turn_once: IdempotentCall
    run_correction_once: IdempotentCall


def bootstrap(
    *,
    settings: InterviewSettings | None = None,
    llm: LLMSettings | None = None,
    model: ChatModel | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Dependencies:
    """The function's composition root (``lambda_agents.composition``); ``sleep``: the agents' waits."""
    settings = settings or load_settings(InterviewSettings)
    service, model = interview_service(settings, llm, model=model, sleep=sleep)
    return Dependencies(
        settings=settings,
        service=service,
        model=model,
        listings=JobListings(DynamoJobCatalog(settings.interviews_table)),
        mine=MyInterviews(DynamoApplicantInterviews(settings.interviews_table)),
        run_turn_once=IdempotentCall(
            _run_turn,
            table_name=settings.idempotency_table,
            key_fields=("userId", "sessionId", "idempotencyKey"),
            validated_field="text",
            expires_after_s=IDEMPOTENCY_SECONDS,
            key_prefix="interview-turn",
            stale=_turn_given_up,
        ),
        run_correction_once=IdempotentCall(
            _run_correction,
            table_name=settings.idempotency_table,
            key_fields=("userId", "sessionId", "fieldId", "idempotencyKey"),
            validated_field="text",
            expires_after_s=IDEMPOTENCY_SECONDS,
            key_prefix="interview-correction",
            stale=_turn_given_up,
        ),
    )


dependencies = CompositionRoot(bootstrap)


def _request_deadline() -> Deadline | None:
    """This request's deadline, from the event and context the resolver holds while it runs."""
    return request_deadline(app.current_event.raw_event, app.lambda_context)


def _turn_given_up(turn: dict[str, Any], kept: dict[str, Any]) -> bool:
    """Whether a kept 202 no longer holds: the worker gave its turn up (the turn reads 503 "send it
    again"), or the turn or interview is gone. The retry then runs the turn again."""
    return accepted_turn_ended(
        kept, lambda: dependencies().service.turn_outcome(turn["userId"], turn["sessionId"], str(kept["turnId"]))
    )


def _run_turn(turn: dict[str, Any]) -> dict[str, Any]:
    # A failing provider and the deadline (ProviderFailed, DeadlineReached) propagate to the
    # resolver's one mapping (503 + Retry-After, or 502): nothing of the turn was written.
    deps = dependencies()
    how = _how(turn, deps.run_turn_once)
    return _answered(
        deps.service.post_message(turn["userId"], turn["sessionId"], turn["text"], _request_deadline(), **how)
    )


def _run_correction(turn: dict[str, Any]) -> dict[str, Any]:
    deps = dependencies()
    how = _how(turn, deps.run_correction_once)
    user, session, field_id = turn["userId"], turn["sessionId"], turn["fieldId"]
    result = deps.service.correct(user, session, field_id, turn["text"], _request_deadline(), **how)
    metrics.add_metric(name="InterviewCorrections", unit=MetricUnit.Count, value=1)
    return _answered(result)


def _how(turn: dict[str, Any], once: IdempotentCall) -> TurnOptions:
    """How the turn was asked for: its retry record and the client's Prefer."""
    return TurnOptions(
        idempotency_record=once.record_id(turn) if "idempotencyKey" in turn else None,
        prefer_later=bool(turn.get("respondAsync")),
    )


def _answered(result: TurnResult | TurnAccepted) -> dict[str, Any]:
    if isinstance(result, TurnAccepted):
        metrics.add_metric(name="InterviewTurnsHandedOver", unit=MetricUnit.Count, value=1)
        if result.model_calls:  # a turn the deadline cut: its worker takes these answers, uncounted
            metrics.add_metric(name="InterviewModelCalls", unit=MetricUnit.Count, value=result.model_calls)
        return result.as_response()
    outcome = result.outcome
    metrics.add_metric(name="InterviewTurns", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="InterviewModelCalls", unit=MetricUnit.Count, value=outcome.model_calls)
    metrics.add_metric(name="InterviewTokens", unit=MetricUnit.Count, value=outcome.usage.total_tokens)
    metrics.add_metric(name="CachedInputTokens", unit=MetricUnit.Count, value=outcome.usage.cached_prompt_tokens)
    metrics.add_metric(name="ModelCostUsd", unit=MetricUnit.NoUnit, value=cost_of(outcome.account))
    if outcome.reply_kind in ("completed", "audit_failed"):
        metrics.add_metric(name="InterviewsFinished", unit=MetricUnit.Count, value=1)
    return turn_view(result).model_dump(by_alias=True, mode="json")


app = build_resolver()


@app.exception_handler(VersionConflict)  # type: ignore[untyped-decorator]
def _turn_conflict(error: VersionConflict) -> Response[str]:
    metrics.add_metric(name="InterviewTurnConflicts", unit=MetricUnit.Count, value=1)
    return domain_error_answer(error)


SessionId = Annotated[
    str, Path(pattern=SESSION_ID_PATTERN, max_length=32, description="the id POST /interviews returned")
]
FieldId = Annotated[str, Path(pattern=FIELD_ID_PATTERN, max_length=64, description="a field_id of the interview's job")]
LimitQuery = Annotated[int, Query(ge=1, le=MAX_PAGE, description=f"Page size (default {DEFAULT_PAGE})")]
CursorQuery = Annotated[
    str | None,
    Query(pattern=CURSOR_PATTERN, max_length=CURSOR_MAX_CHARS, description="The previous page's nextCursor"),
]


def _user() -> str:
    return caller_user_id(app.current_event.raw_event)


@app.get("/jobs", summary="Open jobs, newest first: what an interview can start for")  # type: ignore[untyped-decorator]
def list_open_jobs(limit: LimitQuery = DEFAULT_PAGE, cursor: CursorQuery = None) -> OpenJobList:
    _user()
    return open_job_list(dependencies().listings.open_jobs(limit, cursor))


@app.get("/interviews", summary="The caller's own interviews, newest first: to find one again")  # type: ignore[untyped-decorator]
def list_interviews(limit: LimitQuery = DEFAULT_PAGE, cursor: CursorQuery = None) -> InterviewList:
    return interview_list(dependencies().mine.list(_user(), limit, cursor))


@app.post("/interviews", status_code=201, summary="Start an interview for a job; answers the notice to consent to")  # type: ignore[untyped-decorator]
def create_interview(body: CreateInterviewBody) -> InterviewCreated:
    deps = dependencies()
    session = deps.service.start(_user(), body.job_id)
    logger.info("interview created", extra={"sessionId": session.session_id, "jobVersion": session.job.version})
    metrics.add_metric(name="InterviewsCreated", unit=MetricUnit.Count, value=1)
    return created_view(session, deps.service.notice(session))


@app.post("/interviews/<sessionId>/consent", summary="Accept the notice; the interview begins")  # type: ignore[untyped-decorator]
def consent(sessionId: SessionId, body: ConsentBody) -> InterviewProgress:  # noqa: N803 - the route's name
    session = dependencies().service.consent(_user(), sessionId, body.notice_id)
    return progress_view(session)


TURNS = TurnRoutes(
    TurnAnswer,
    TurnAcceptedView,
    url_field="turnUrl",
    request=app,
    answered_description="The agents' reply",
    pending_description="Accepted: the agents answer after the request; GET the Location for the reply (Retry-After)",
)
TurnId = Annotated[str, Path(pattern=TURN_ID_PATTERN, max_length=22, description="turnId of the 202")]


@app.post(  # type: ignore[untyped-decorator]
    "/interviews/<sessionId>/messages",
    summary="Send the applicant's message; the agents reply (200), or later at the Location (202)",
    responses=spending_user_tokens(TURNS.responses),
)
def post_message(
    sessionId: SessionId,  # noqa: N803 - the route's name
    body: MessageBody,
    idempotency_key: IdempotencyKey = None,
    prefer: PreferHeader = None,
) -> Response[TurnAnswer | TurnAcceptedView]:
    turn = {"userId": _user(), "sessionId": sessionId, "text": body.text}
    return TURNS.post(turn, prefer, idempotency_key, answer=_run_turn, retry_safe=lambda: dependencies().run_turn_once)


@app.get(  # type: ignore[untyped-decorator]
    "/interviews/<sessionId>/turns/<turnId>",
    summary="Read the reply of a turn answered after its request: 200 when there, 202 while it runs",
    responses=TURNS.responses,
)
def read_turn(sessionId: SessionId, turnId: TurnId) -> Response[TurnAnswer | TurnAcceptedView]:  # noqa: N803
    return TURNS.read(dependencies().service.turn_outcome(_user(), sessionId, turnId))


@app.post(  # type: ignore[untyped-decorator]
    "/interviews/<sessionId>/fields/<fieldId>/correction",
    summary="Correct a done or skipped field: the answer is reviewed again, the interview audited again",
    responses=spending_user_tokens(TURNS.responses),
)
def correct_field(
    sessionId: SessionId,  # noqa: N803 - the route's name
    fieldId: FieldId,  # noqa: N803 - the route's name
    body: MessageBody,
    idempotency_key: IdempotencyKey = None,
    prefer: PreferHeader = None,
) -> Response[TurnAnswer | TurnAcceptedView]:
    turn = {"userId": _user(), "sessionId": sessionId, "fieldId": fieldId, "text": body.text}
    return TURNS.post(
        turn, prefer, idempotency_key, answer=_run_correction, retry_safe=lambda: dependencies().run_correction_once
    )


@app.post("/interviews/<sessionId>/fields/<fieldId>/skip", summary="Skip an optional field not answered yet")  # type: ignore[untyped-decorator]
def skip_field(sessionId: SessionId, fieldId: FieldId) -> InterviewProgress:  # noqa: N803 - the route's names
    session = dependencies().service.skip(_user(), sessionId, fieldId)
    metrics.add_metric(name="InterviewFieldsSkipped", unit=MetricUnit.Count, value=1)
    return progress_view(session)


@app.get("/interviews/<sessionId>", summary="The interview's state, facts, notice and transcript")  # type: ignore[untyped-decorator]
def get_interview(sessionId: SessionId) -> InterviewDetail:  # noqa: N803 - the route's name
    deps = dependencies()
    stored = deps.service.get(_user(), sessionId)
    return session_view(stored, deps.service.notice(stored.session))


@app.delete("/interviews/<sessionId>", status_code=204, summary="Withdraw: delete everything stored for it")  # type: ignore[untyped-decorator]
def withdraw(sessionId: SessionId) -> Response[str]:  # noqa: N803 - the route's name
    dependencies().service.withdraw(_user(), sessionId)
    logger.info("interview withdrawn", extra={"sessionId": sessionId})
    metrics.add_metric(name="InterviewsWithdrawn", unit=MetricUnit.Count, value=1)
    return Response(status_code=204, body="")


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    metrics.add_metric(name="InterviewRequests", unit=MetricUnit.Count, value=1)
    deps = dependencies()
    deps.run_turn_once.register_lambda_context(context)
    deps.run_correction_once.register_lambda_context(context)
    try:
        return app.resolve(event, context)
    finally:
        emit_push_counts(deps.service.live)
