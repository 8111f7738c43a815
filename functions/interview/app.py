"""InterviewFunction: the job-application interview API (spec 003, issue 6). Cognito user routes.

- ``POST /interviews`` ``{jobId, fields: [{field_id, label, intent, required, required_facts,
  done_criteria}]}`` -> 201 ``{sessionId, status, currentAgent, ...}``; no model call.
- ``POST /interviews/{sessionId}/messages`` ``{text}`` -> the reply, ``awaitingUserResponse``,
  the current agent and field, the field statuses, the turn's token usage.
- ``GET /interviews/{sessionId}`` -> state, field statuses, collected facts, transcript, and
  the audit once the interview has finished.

A session belongs to the user who created it (the Cognito ``sub`` from the request context);
another user's session, an unknown one and a malformed id are the same 404. Every route needs
an identity: without one the answer is 401 before anything else is looked at.

Idempotency: an ``Idempotency-Key`` header (optional; 1-128 of ``A-Z a-z 0-9 - _ . :``) makes
a message safe to retry: the same key, user and session return the first answer without
running the agents again (Powertools idempotency on IDEMPOTENCY_TABLE, 24 h). A failed answer
(409, 503, ...) is not kept, so a retry runs again; the same key with a different text is a
409 ``IDEMPOTENCY_KEY_REUSED``; while the first request still runs, 409 ``REQUEST_IN_PROGRESS``.
Without the header every POST is a new message.

Errors: 409 ``VERSION_CONFLICT`` when another message to the same session was stored first
(nothing of this one was written: send it again), ``INTERVIEW_FINISHED``, ``TURN_LIMIT``;
503 (Retry-After) when the model provider keeps failing, the request's time runs out before
anything of the turn was done, or DynamoDB throttles, with nothing of the turn written; 502 when
the provider rejects the request.

Time: the turn's deadline is API Gateway's 29 s from when it received the request, or the
Lambda's remaining time if earlier, less 3 s to store (``api.time_budget``); a turn that has done
something when it runs out ends with a graceful reply and is stored once.

Environment: INTERVIEWS_TABLE, IDEMPOTENCY_TABLE, INTERVIEW_TTL_DAYS (90),
INTERVIEW_MAX_ITERATIONS (10 model calls per applicant turn), INTERVIEW_MAX_TURNS (100), and
the LLM settings (AI_AGENT_MODE, OPENAI_*).
"""

from __future__ import annotations

import math
import re
from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from lambda_agents.api.errors import ApiError, Conflict, NotFound, ServiceUnavailable
from lambda_agents.api.idempotency import IdempotencyKey, IdempotentCall
from lambda_agents.api.identity import caller_user_id
from lambda_agents.api.resolver import build_resolver
from lambda_agents.api.time_budget import request_deadline
from lambda_agents.config import LLMSettings, load_settings
from lambda_agents.interview.agent_loop import AgentEnv
from lambda_agents.interview.errors import InterviewFinished, SessionNotFound, TurnLimitReached, VersionConflict
from lambda_agents.interview.interview_log import PowertoolsInterviewLog
from lambda_agents.interview.offline import RESPONDERS
from lambda_agents.interview.orchestrator import Orchestrator
from lambda_agents.interview.requests import CreateInterviewBody, MessageBody
from lambda_agents.interview.service import InterviewService
from lambda_agents.interview.subagents import SubAgents, SubAgentSettings
from lambda_agents.interview.views import (
    InterviewCreated,
    InterviewDetail,
    TurnAnswer,
    created_view,
    session_view,
    turn_view,
)
from lambda_agents.llm import Deadline, DeadlineReached, ProviderFailed
from lambda_agents.llm.errors import RateLimited
from lambda_agents.llm.factory import build_chat_model
from lambda_agents.observability import logger, metrics
from lambda_agents.storage.interviews import DynamoInterviewRepository, DynamoRunStepRecorder
from pydantic import BaseModel, ConfigDict, Field

IDEMPOTENCY_SECONDS = 24 * 3600
_SESSION_ID = re.compile(r"^[0-9a-f]{32}$")
RETRY_AFTER_S = 5


class InterviewSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    interviews_table: str = Field(alias="INTERVIEWS_TABLE", min_length=1)
    idempotency_table: str = Field(alias="IDEMPOTENCY_TABLE", min_length=1)
    ttl_days: int = Field(default=90, alias="INTERVIEW_TTL_DAYS", ge=1, le=3650)
    max_iterations: int = Field(default=10, alias="INTERVIEW_MAX_ITERATIONS", ge=1, le=50)
    max_turns: int = Field(default=100, alias="INTERVIEW_MAX_TURNS", ge=1, le=500)


class ModelError(ApiError):
    status = 502
    code = "MODEL_ERROR"


class Ports:
    """What one container builds once: settings, the model, the service, the idempotent turn."""

    def __init__(self) -> None:
        self.settings = load_settings(InterviewSettings)
        llm = load_settings(LLMSettings)
        self.model = build_chat_model(llm, responders=RESPONDERS)
        self.run_steps = DynamoRunStepRecorder(self.settings.interviews_table, self.settings.ttl_days)
        env = AgentEnv(
            model=self.model,
            run_steps=self.run_steps,
            log=PowertoolsInterviewLog(),
            subagents=SubAgents(self.model, SubAgentSettings(request_timeout_s=llm.request_timeout_s)),
            request_timeout_s=llm.request_timeout_s,
        )
        self.service = InterviewService(
            DynamoInterviewRepository(self.settings.interviews_table, self.settings.ttl_days),
            Orchestrator(env, max_iterations=self.settings.max_iterations),
            max_turns=self.settings.max_turns,
        )
        self.deadline: Deadline | None = None
        self.run_turn_once = IdempotentCall(
            self.run_turn,
            table_name=self.settings.idempotency_table,
            key_fields=("userId", "sessionId", "idempotencyKey"),
            validated_field="text",
            expires_after_s=IDEMPOTENCY_SECONDS,
        )

    def run_turn(self, turn: dict[str, Any]) -> dict[str, Any]:
        try:
            result = self.service.post_message(turn["userId"], turn["sessionId"], turn["text"], self.deadline)
        except SessionNotFound as error:
            raise NotFound(str(error)) from None
        except InterviewFinished as error:
            raise Conflict(str(error), code="INTERVIEW_FINISHED") from None
        except TurnLimitReached as error:
            raise Conflict(str(error), code="TURN_LIMIT") from None
        except VersionConflict:
            metrics.add_metric(name="InterviewTurnConflicts", unit=MetricUnit.Count, value=1)
            raise Conflict(
                "another message to this interview was stored first; nothing of this one was stored: send it again",
                code="VERSION_CONFLICT",
            ) from None
        except DeadlineReached:
            raise ServiceUnavailable(
                "the interview could not answer in time; nothing was stored: send the message again",
                code="TURN_TIMEOUT",
                headers={"Retry-After": str(RETRY_AFTER_S)},
            ) from None
        except ProviderFailed as error:
            raise _provider_error(error) from None
        outcome = result.outcome
        metrics.add_metric(name="InterviewTurns", unit=MetricUnit.Count, value=1)
        metrics.add_metric(name="InterviewModelCalls", unit=MetricUnit.Count, value=outcome.iterations)
        metrics.add_metric(name="InterviewTokens", unit=MetricUnit.Count, value=outcome.usage.total_tokens)
        if outcome.reply_kind in ("completed", "audit_failed"):
            metrics.add_metric(name="InterviewsFinished", unit=MetricUnit.Count, value=1)
        return turn_view(result).model_dump(by_alias=True, mode="json")


def _provider_error(error: ProviderFailed) -> ApiError:
    if error.cause.retryable:
        wait = error.cause.retry_after_s if isinstance(error.cause, RateLimited) else None
        return ServiceUnavailable(
            f"the model provider is unavailable ({error.kind}); nothing was stored: send the message again",
            code="MODEL_UNAVAILABLE",
            headers={"Retry-After": str(max(1, math.ceil(wait or RETRY_AFTER_S)))},
        )
    return ModelError(f"the model provider rejected the request ({error.kind})")


@cache
def _ports() -> Ports:
    return Ports()


app = build_resolver()


def _session_id(raw: str) -> str:
    if not _SESSION_ID.match(raw):
        raise NotFound(f"no interview {raw[:64]!r}")
    return raw


@app.post("/interviews", status_code=201, summary="Start an interview for a job's fields")  # type: ignore[untyped-decorator]
def create_interview(body: CreateInterviewBody) -> InterviewCreated:
    user_id = caller_user_id(app.current_event.raw_event)
    session = _ports().service.create(user_id, body.job())
    logger.info("interview created", extra={"sessionId": session.session_id, "fields": len(body.fields)})
    metrics.add_metric(name="InterviewsCreated", unit=MetricUnit.Count, value=1)
    return created_view(session)


@app.post("/interviews/<sessionId>/messages", summary="Send the applicant's message; the agents reply")  # type: ignore[untyped-decorator]
def post_message(
    sessionId: str,  # noqa: N803 - the route's name
    body: MessageBody,
    idempotency_key: IdempotencyKey = None,
) -> TurnAnswer:
    turn = {
        "userId": caller_user_id(app.current_event.raw_event),
        "sessionId": _session_id(sessionId),
        "text": body.text,
    }
    ports = _ports()
    if idempotency_key is None:
        return TurnAnswer.model_validate(ports.run_turn(turn))
    return TurnAnswer.model_validate(ports.run_turn_once({**turn, "idempotencyKey": idempotency_key}))


@app.get("/interviews/<sessionId>", summary="The interview's state, facts, transcript and audit")  # type: ignore[untyped-decorator]
def get_interview(sessionId: str) -> InterviewDetail:  # noqa: N803 - the route's name
    user_id = caller_user_id(app.current_event.raw_event)
    try:
        stored = _ports().service.get(user_id, _session_id(sessionId))
    except SessionNotFound as error:
        raise NotFound(str(error)) from None
    return session_view(stored)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    metrics.add_metric(name="InterviewRequests", unit=MetricUnit.Count, value=1)
    ports = _ports()
    ports.run_turn_once.register_lambda_context(context)
    ports.deadline = request_deadline(event, context)
    return app.resolve(event, context)
