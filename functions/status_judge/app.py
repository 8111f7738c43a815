"""StatusJudgeFunction: which rule an agent's output matches (spec 004).

Two ways in: ``POST /judge`` (IAM-signed, through API Gateway) and a direct invocation with the
request as the event (a Step Functions Task). Directly, a bad request raises
``InvalidJudgeRequest``, every stage failing because the provider was unavailable
``JudgeModelUnavailable`` (a state machine can ``Retry`` it) and any other all-stages failure
``JudgmentFailed`` (``Catch`` it). Over HTTP they are a 400, a 503 with Retry-After (the same
answer every function gives a model outage) and a 502. Failures name the stages' error kinds
only, never the provider's text, in the answer and in the stored failure record.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from lambda_agents.api.errors import BadRequest, ModelUnavailable
from lambda_agents.api.identity import caller_admin_arn
from lambda_agents.api.resolver import build_resolver
from lambda_agents.api.time_budget import request_deadline
from lambda_agents.config import LLMSettings, load_settings
from lambda_agents.errors import DomainError
from lambda_agents.judge.candidates import NoCandidates
from lambda_agents.judge.models import JudgeAnswer, JudgeRequest
from lambda_agents.judge.offline import RESPONDERS
from lambda_agents.judge.service import JudgeModelUnavailable, JudgeService, JudgmentFailed
from lambda_agents.llm import Deadline
from lambda_agents.llm.factory import build_chat_model
from lambda_agents.observability import logger, metrics
from lambda_agents.storage.dynamodb import StorageError
from lambda_agents.storage.judgments import DynamoJudgmentStore
from lambda_agents.validation_errors import describe_errors
from pydantic import BaseModel, ConfigDict, Field, ValidationError

app = build_resolver(auth="iam")
_context: dict[str, Any] = {}


class JudgeSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    judgments_table: str = Field(alias="JUDGMENTS_TABLE", min_length=1)


class InvalidJudgeRequest(ValueError):
    """The direct-invocation request is malformed; the message names the field."""


class JudgmentFailedError(DomainError):
    status = 502
    code = "JUDGMENT_FAILED"


@cache
def _settings() -> JudgeSettings:
    return load_settings(JudgeSettings)


@cache
def _service() -> JudgeService:
    model = build_chat_model(load_settings(LLMSettings), responders=RESPONDERS)
    return JudgeService(model=model, deadline_factory=_deadline)


def _deadline() -> Deadline | None:
    """Over HTTP the request's own budget (API Gateway's 29 s) counts too; directly, the Lambda's alone."""
    return request_deadline(_context.get("api_event"), _context.get("lambda"))


@cache
def _store() -> DynamoJudgmentStore:
    return DynamoJudgmentStore(_settings().judgments_table)


def judge(request: JudgeRequest) -> dict[str, Any]:
    try:
        judgment = _service().judge(request)
    except JudgmentFailed as error:
        _record_failure(request, error)
        raise
    judgment_id = _store().save(judgment, request.output)
    metrics.add_dimension(name="method", value=judgment.method.value)
    metrics.add_metric(name="Judgments", unit="Count", value=1)
    return {**judgment.as_response(), "judgmentId": judgment_id}


def _record_failure(request: JudgeRequest, error: JudgmentFailed) -> None:
    """Kept for audit with its stage log; the caller's answer is the failure, even when this write fails."""
    metrics.add_metric(name="JudgmentsFailed", unit="Count", value=1)
    try:
        _store().save_failure(request.movement, error.stages, type(error).__name__, request.output)
    except StorageError:
        logger.exception("failed judgment not recorded", extra={"movement": request.movement})


@app.post("/judge")
def post_judge(body: JudgeRequest) -> JudgeAnswer:
    caller_admin_arn(app.current_event.raw_event)
    try:
        return JudgeAnswer.model_validate(judge(body))
    except NoCandidates as error:
        raise BadRequest(str(error), code="NO_CANDIDATE_RULES") from None
    except JudgeModelUnavailable as error:
        unavailable = ModelUnavailable(str(error), error.retry_after_s)
        unavailable.details = [s.model_dump(by_alias=True) for s in error.stages]
        raise unavailable from None
    except JudgmentFailed as error:
        raise JudgmentFailedError(str(error), details=[s.model_dump(by_alias=True) for s in error.stages]) from None


def _direct(event: dict[str, Any]) -> dict[str, Any]:
    try:
        request = JudgeRequest.model_validate(event)
    except ValidationError as error:
        fields = ", ".join(describe_errors(error))
        raise InvalidJudgeRequest(f"invalid judge request: {fields}") from None
    try:
        return judge(request)
    except NoCandidates as error:
        raise InvalidJudgeRequest(str(error)) from None


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    metrics.add_metric(name="JudgeRequests", unit="Count", value=1)  # a failed request still flushes metrics
    _context["lambda"] = context
    _context["api_event"] = None
    if "httpMethod" in event and "requestContext" in event:
        _context["api_event"] = event
        return app.resolve(event, context)
    return _direct(event)
