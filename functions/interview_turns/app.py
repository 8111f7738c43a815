"""InterviewTurnFunction: runs the interview turns that did not fit in their request.

InterviewFunction hands a turn over (``lambda_agents.interview.pending_turns``) when this
container's turns take longer than the request's time (a turn makes several model calls: minutes
with a reasoning model), when the client asks for it (``Prefer: respond-async``), or when the
deadline cut the turn anyway: nothing of the turn is committed, the session is marked, and this
function, on InterviewTurnsQueue, runs the turn with the same agents, the invocation's whole time
(Timeout 300 s) and the same versioned commit, which also stores the reply the client reads at
``GET /interviews/{id}/turns/{turnId}`` and lifts the mark, in one transaction.

Per record, the delivery policy the chat's worker shares (``lambda_agents.answered_later``): a
message naming no turn pending in the user's interview (withdrawn, committed already, another
turn), and an interview withdrawn while its turn runs, end the turn without a commit (logged, not
delivered again). A provider that keeps failing, or any other failure, is delivered again (the
provider may recover); on the last delivery (INTERVIEW_TURNS_MAX_RECEIVE_COUNT) the turn's failure
is recorded instead (the client reads 503 MODEL_UNAVAILABLE and may send the message again) and
the session takes messages again.

Environment: as InterviewFunction's, and INTERVIEW_TURNS_MAX_RECEIVE_COUNT.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from lambda_agents.answered_later import RecordOutcome, TurnWorker, WorkerParts
from lambda_agents.bootstrap.interview import TurnWorkerSettings, interview_service
from lambda_agents.composition import CompositionRoot
from lambda_agents.config import LLMSettings, load_settings
from lambda_agents.interview.pending_turns import TurnMessage
from lambda_agents.interview.turn_runner import TurnResult
from lambda_agents.llm.accounting import cost_of
from lambda_agents.llm.types import ChatModel
from lambda_agents.observability import logger, metrics


def bootstrap(
    *, settings: TurnWorkerSettings | None = None, llm: LLMSettings | None = None, model: ChatModel | None = None
) -> WorkerParts[TurnMessage, TurnResult]:
    """The function's composition root (``lambda_agents.composition``)."""
    settings = settings or load_settings(TurnWorkerSettings)
    service, _ = interview_service(settings, llm, model=model)
    return WorkerParts(service, settings.max_receive_count, service.live)


dependencies = CompositionRoot(bootstrap)
WORKER = TurnWorker(
    TurnMessage, "interview turn", gives_up_as=": its failure recorded (503)", records_metric="InterviewTurnRecords"
)


def _count(outcome: RecordOutcome[TurnResult]) -> None:
    result = outcome.result
    if outcome.gave_up:
        metrics.add_metric(name="InterviewTurnsGivenUp", unit=MetricUnit.Count, value=1)
    elif result is None:  # a normal end: the service logged why
        metrics.add_metric(name="InterviewTurnsSkipped", unit=MetricUnit.Count, value=1)
    else:
        usage = result.outcome.usage
        metrics.add_metric(name="InterviewTurns", unit=MetricUnit.Count, value=1)
        metrics.add_metric(name="InterviewModelCalls", unit=MetricUnit.Count, value=result.outcome.model_calls)
        metrics.add_metric(name="InterviewTokens", unit=MetricUnit.Count, value=usage.total_tokens)
        metrics.add_metric(name="CachedInputTokens", unit=MetricUnit.Count, value=usage.cached_prompt_tokens)
        metrics.add_metric(name="ModelCostUsd", unit=MetricUnit.NoUnit, value=cost_of(result.outcome.account))


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return WORKER.handle(event, context, dependencies(), _count)
