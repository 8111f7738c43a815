"""ChatAnswerFunction: writes the chat answers that did not fit in their request.

ChatFunction hands a turn over (``lambda_agents.chat.pending``) when the whole answer cannot be
written in API Gateway's 29 s at the model's pace, or the client asked for it
(``Prefer: respond-async``): the user's message is stored, the client has a 202 with the
answer's location, and this function, on ChatAnswersQueue, answers the turn with the same use
case, the invocation's whole time (Timeout 180 s: a reasoning model's long first token, then
1,200 tokens at a slow hour's 20 tokens/s) and the same single write, conditional on the answer's
seq, so an answer is stored exactly once however often its message is delivered.

Per record, the delivery policy the interview's worker shares (``lambda_agents.answered_later``): a
message naming no user's message that waits for the worker (a session deleted meanwhile, a turn
already answered, an answer's seq, a message never handed over), and a session deleted while the
model answers, end the turn without a write (logged, not delivered again). Within a delivery a
provider that keeps failing stores the fallback answer, as the message route does, and an answer
the invocation's deadline cuts is stored truncated; any other failure (DynamoDB's) is delivered
again, and on the last delivery (CHAT_ANSWERS_MAX_RECEIVE_COUNT) the fallback answer is stored
instead, so no turn waits for ever.

Environment: as ChatFunction's (CHAT_TABLE, the history and model settings, OPENAI_*), and
CHAT_ANSWERS_MAX_RECEIVE_COUNT.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from lambda_agents.answered_later import RecordOutcome, TurnWorker, WorkerParts
from lambda_agents.bootstrap.chat import AnswerWorkerSettings, pending_answers
from lambda_agents.chat.pending import PendingTurn
from lambda_agents.chat.replies import ProcessMessageResult
from lambda_agents.composition import CompositionRoot
from lambda_agents.config import LLMSettings, load_settings
from lambda_agents.llm.accounting import cost_of
from lambda_agents.llm.types import ChatModel
from lambda_agents.observability import logger, metrics


def bootstrap(
    *, settings: AnswerWorkerSettings | None = None, llm: LLMSettings | None = None, model: ChatModel | None = None
) -> WorkerParts[PendingTurn, ProcessMessageResult]:
    """The function's composition root (``lambda_agents.composition``)."""
    settings = settings or load_settings(AnswerWorkerSettings)
    answers = pending_answers(settings, llm, model=model)
    return WorkerParts(answers, settings.max_receive_count, answers.answering.live)


dependencies = CompositionRoot(bootstrap)
WORKER = TurnWorker(PendingTurn, "chat answer", gives_up_as=": the fallback answer", records_metric="ChatAnswerRecords")


def _count(outcome: RecordOutcome[ProcessMessageResult]) -> None:
    result = outcome.result
    if result is None:  # a normal end: the worker logged why
        metrics.add_metric(name="ChatAnswersSkipped", unit=MetricUnit.Count, value=1)
        return
    metrics.add_metric(name="ChatMessages", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="ChatFallbacks", unit=MetricUnit.Count, value=int(result.fallback))
    metrics.add_metric(name="ChatTokens", unit=MetricUnit.Count, value=result.usage.total_tokens)
    metrics.add_metric(name="CachedInputTokens", unit=MetricUnit.Count, value=result.usage.cached_prompt_tokens)
    metrics.add_metric(name="ModelCostUsd", unit=MetricUnit.NoUnit, value=cost_of(result.account))
    metrics.add_metric(name="ChatAnswersWritten", unit=MetricUnit.Count, value=1)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return WORKER.handle(event, context, dependencies(), _count)
