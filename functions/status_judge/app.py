"""StatusJudgeFunction: which rule an agent's output matches (docs/judge.md).

Two ways in: ``POST /judge`` (IAM-signed, through API Gateway) and a direct invocation with the
request as the event (a Step Functions Task). Directly, a bad request raises
``InvalidJudgeRequest``, every stage failing because the provider was unavailable
``JudgeModelUnavailable`` (a state machine can ``Retry`` it) and any other all-stages failure
``JudgmentFailed`` (``Catch`` it). Over HTTP they are a 400, a 503 with Retry-After (the same
answer every function gives a model outage) and a 502. Failures name the stages' error kinds
only, never the provider's text, in the answer and in the stored failure record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.utilities.typing import LambdaContext
from lambda_agents.api.errors import BadRequest, ModelUnavailable
from lambda_agents.api.identity import caller_admin_arn
from lambda_agents.api.resolver import build_resolver
from lambda_agents.api.time_budget import request_deadline
from lambda_agents.composition import CompositionRoot
from lambda_agents.config import LLMSettings, load_settings
from lambda_agents.errors import DomainError
from lambda_agents.judge.candidates import NoCandidates
from lambda_agents.judge.models import JudgeAnswer, JudgeRequest
from lambda_agents.judge.offline import RESPONDERS
from lambda_agents.judge.service import JudgeModelUnavailable, JudgeService, JudgmentFailed
from lambda_agents.llm import Deadline
from lambda_agents.llm.accounting import cost_of
from lambda_agents.llm.factory import build_chat_model
from lambda_agents.llm.types import ChatModel
from lambda_agents.observability import logger, metrics
from lambda_agents.storage.dynamodb import StorageError
from lambda_agents.storage.judgments import DynamoJudgmentStore
from lambda_agents.validation_errors import describe_errors
from pydantic import BaseModel, ConfigDict, Field, ValidationError

app = build_resolver(auth="iam")


class JudgeSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    judgments_table: str = Field(alias="JUDGMENTS_TABLE", min_length=1)


class InvalidJudgeRequest(ValueError):
    """The direct-invocation request is malformed; the message names the field."""


class JudgmentFailedError(DomainError):
    status = 502
    code = "JUDGMENT_FAILED"


@dataclass(frozen=True)
class Dependencies:
    service: JudgeService
    store: DynamoJudgmentStore


def bootstrap(
    *, settings: JudgeSettings | None = None, llm: LLMSettings | None = None, model: ChatModel | None = None
) -> Dependencies:
    """The function's composition root (``lambda_agents.composition``)."""
    settings = settings or load_settings(JudgeSettings)
    model = model or build_chat_model(llm or load_settings(LLMSettings), responders=RESPONDERS)
    return Dependencies(JudgeService(model=model), DynamoJudgmentStore(settings.judgments_table))


dependencies = CompositionRoot(bootstrap)


def judge(request: JudgeRequest, deadline: Deadline | None) -> dict[str, Any]:
    """Over HTTP the deadline is the request's own budget (API Gateway's 29 s) or the Lambda's
    remaining time, whichever ends first; invoked directly, the Lambda's alone."""
    deps = dependencies()
    try:
        judgment = deps.service.judge(request, deadline)
    except JudgmentFailed as error:
        _record_failure(request, error)
        raise
    judgment_id = deps.store.save(judgment, request.output)
    # The method is this metric's own dimension: added to the shared metrics it would also split
    # JudgeRequests and JudgeTokens by method (CloudWatch's metrics match dimension sets exactly).
    with single_metric(name="Judgments", unit=MetricUnit.Count, value=1) as judged:
        judged.add_dimension(name="method", value=judgment.method.value)
    cost = None if judgment.account is None else judgment.account.cost_usd
    _count_tokens(judgment.total_tokens, judgment.cached_prompt_tokens, cost)
    return {**judgment.as_response(), "judgmentId": judgment_id}


def _count_tokens(total: int, cached: int, cost_usd: float | None) -> None:
    metrics.add_metric(name="JudgeTokens", unit=MetricUnit.Count, value=total)
    metrics.add_metric(name="CachedInputTokens", unit=MetricUnit.Count, value=cached)
    # What the stages' calls cost at the price table's prices (the dashboard's cost widget).
    metrics.add_metric(name="ModelCostUsd", unit=MetricUnit.NoUnit, value=cost_usd or 0.0)


def _record_failure(request: JudgeRequest, error: JudgmentFailed) -> None:
    """Kept for audit with its stage log; the caller's answer is the failure, even when this write fails."""
    metrics.add_metric(name="JudgmentsFailed", unit="Count", value=1)
    _count_tokens(error.usage.total_tokens, error.usage.cached_prompt_tokens, cost_of(error.account))
    try:
        account = None if error.account is None else error.account.as_dict()
        dependencies().store.save_failure(request.movement, error.stages, type(error).__name__, request.output, account)
    except StorageError:
        logger.exception("failed judgment not recorded", extra={"movement": request.movement})


@app.post("/judge")
def post_judge(body: JudgeRequest) -> JudgeAnswer:
    caller_admin_arn(app.current_event.raw_event)
    try:
        deadline = request_deadline(app.current_event.raw_event, app.lambda_context)
        return JudgeAnswer.model_validate(judge(body, deadline))
    except NoCandidates as error:
        raise BadRequest(str(error), code="NO_CANDIDATE_RULES") from None
    except JudgeModelUnavailable as error:
        unavailable = ModelUnavailable(str(error), error.retry_after_s)
        unavailable.details = [s.model_dump(by_alias=True) for s in error.stages]
        raise unavailable from None
    except JudgmentFailed as error:
        raise JudgmentFailedError(str(error), details=[s.model_dump(by_alias=True) for s in error.stages]) from None


def _direct(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        request = JudgeRequest.model_validate(event)
    except ValidationError as error:
        fields = ", ".join(describe_errors(error))
        raise InvalidJudgeRequest(f"invalid judge request: {fields}") from None
    try:
        return judge(request, request_deadline(None, context))
    except NoCandidates as error:
        raise InvalidJudgeRequest(str(error)) from None


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    metrics.add_metric(name="JudgeRequests", unit="Count", value=1)  # a failed request still flushes metrics
    if "httpMethod" in event and "requestContext" in event:
        return app.resolve(event, context)
    return _direct(event, context)
