"""InterviewTurnFunction: runs the interview turns that did not fit in their request.

InterviewFunction hands a turn over (``lambda_agents.interview.pending_turns``) when this
container's turns take longer than the request's time (a turn makes several model calls: minutes
with a reasoning model), when the client asks for it (``Prefer: respond-async``), or when the
deadline cut the turn anyway: nothing of the turn is committed, the session is marked, and this
function, on InterviewTurnsQueue, runs the turn with the same agents, the invocation's whole time
(Timeout 300 s) and the same versioned commit, which also stores the reply the client reads at
``GET /interviews/{id}/turns/{turnId}`` and lifts the mark, in one transaction.

Per record, the settle policy the chat's worker shares (``lambda_agents.answered_later``): a
message naming no turn pending in the user's interview (withdrawn, committed already, another
turn), and an interview withdrawn while its turn runs, end the turn without a commit (logged, not
delivered again). A provider that keeps failing, or any other failure, is delivered again (the
provider may recover); on the last delivery (INTERVIEW_TURNS_MAX_RECEIVE_COUNT) the turn's failure
is recorded instead (the client reads 503 MODEL_UNAVAILABLE and may send the message again) and
the session takes messages again.

Environment: as InterviewFunction's, and INTERVIEW_TURNS_MAX_RECEIVE_COUNT.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from lambda_agents.answered_later import TurnWorker, process_records
from lambda_agents.bootstrap.interview import InterviewSettings, interview_service
from lambda_agents.composition import CompositionRoot
from lambda_agents.config import LLMSettings, load_settings
from lambda_agents.interview.pending_turns import TurnMessage
from lambda_agents.interview.service import InterviewService
from lambda_agents.llm.accounting import cost_of
from lambda_agents.llm.policy import Deadline
from lambda_agents.llm.types import ChatModel
from lambda_agents.observability import logger, metrics
from lambda_agents.spending import Admission
from pydantic import ConfigDict, Field


class TurnSettings(InterviewSettings):
    model_config = ConfigDict(frozen=True, extra="ignore")

    idempotency_table: str = Field(default="", alias="IDEMPOTENCY_TABLE")
    max_receive_count: int = Field(default=5, alias="INTERVIEW_TURNS_MAX_RECEIVE_COUNT", ge=1, le=1000)


@dataclass(frozen=True)
class Dependencies:
    settings: TurnSettings
    service: InterviewService


def bootstrap(
    *, settings: TurnSettings | None = None, llm: LLMSettings | None = None, model: ChatModel | None = None
) -> Dependencies:
    """The function's composition root (``lambda_agents.composition``)."""
    settings = settings or load_settings(TurnSettings)
    return Dependencies(settings, interview_service(settings, llm, model=model)[0])


dependencies = CompositionRoot(bootstrap)


WORKER = TurnWorker(TurnMessage, what="interview turn", settled_as=": its failure recorded (503)")


def _run(record: SQSRecord, context: LambdaContext) -> None:
    deps = dependencies()
    service = deps.service
    settled = WORKER.settle(
        record,
        deps.settings.max_receive_count,
        run=lambda turn: service.run_pending(
            turn.user_id, turn.session_id, turn.turn_id, Deadline.from_lambda_context(context), _admission(turn)
        ),
        give_up=lambda turn, error: service.give_up_pending(
            turn.session_id, turn.turn_id, _failure_kind(error), _admission(turn)
        ),
    )
    result = settled.result
    if settled.gave_up:
        metrics.add_metric(name="InterviewTurnsGivenUp", unit=MetricUnit.Count, value=1)
    elif result is None:  # a normal end: the service logged why
        metrics.add_metric(name="InterviewTurnsSkipped", unit=MetricUnit.Count, value=1)
    else:
        metrics.add_metric(name="InterviewTurns", unit=MetricUnit.Count, value=1)
        metrics.add_metric(name="InterviewModelCalls", unit=MetricUnit.Count, value=result.outcome.iterations)
        metrics.add_metric(name="InterviewTokens", unit=MetricUnit.Count, value=result.outcome.usage.total_tokens)
        usage = result.outcome.usage
        metrics.add_metric(name="CachedInputTokens", unit=MetricUnit.Count, value=usage.cached_prompt_tokens)
        metrics.add_metric(name="ModelCostUsd", unit=MetricUnit.NoUnit, value=cost_of(result.outcome.account))


def _admission(turn: TurnMessage) -> Admission:
    """The day and reservation the request admitted the turn with: its tokens count there."""
    return dependencies().service.budget.accepted(turn.user_id, turn.spending_day, turn.reserved_tokens)


def _failure_kind(error: Exception) -> str:
    """What the recorded failure says: the model failure's kind, else the error's type."""
    return str(getattr(error, "kind", None) or type(error).__name__)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return process_records(event, context, lambda record: _run(record, context), "InterviewTurnRecords")
