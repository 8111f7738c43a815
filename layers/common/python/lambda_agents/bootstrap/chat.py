"""The chat turn's parts with their ports, for ChatFunction (the message route: ``chat_turns``) and
ChatAnswerFunction (the turns answered after the request: ``pending_answers``), on one
``ChatAnswering`` each, wired the same way."""

from __future__ import annotations

from pydantic import Field

from ..answered_later import Handover
from ..chat.answering import ChatAnswering, ChatSettings
from ..chat.audit import AuditHasher, load_audit_salt
from ..chat.conversation import AIConversationService, ConversationPolicy
from ..chat.history import TokenBudget
from ..chat.offline import RESPONDERS
from ..chat.pending import PendingTurn, answer_times
from ..chat.settings import ChatEnvironment
from ..chat.use_case import ProcessUserMessageUseCase
from ..chat.worker import PendingAnswers
from ..config import LLMSettings, load_settings
from ..llm.factory import build_chat_model
from ..llm.shared_learning import SharedLearning, SharedPace
from ..llm.types import ChatModel
from ..spending import UserLimits
from ..storage.chat import DynamoChatStore
from ..storage.chat_rate_limit import DynamoRateLimiter
from ..storage.learning import DynamoLearningRecord
from ..storage.queues import QueueSender
from .live import live_channel
from .spending import daily_budget


class AnswerWorkerSettings(ChatEnvironment):
    """ChatAnswerFunction's: no retry records of its own, and how often a turn is delivered."""

    idempotency_table: str = Field(default="", alias="IDEMPOTENCY_TABLE")
    max_receive_count: int = Field(default=5, alias="CHAT_ANSWERS_MAX_RECEIVE_COUNT", ge=1, le=1000)


def chat_answering(
    env: ChatEnvironment, llm: LLMSettings | None = None, *, model: ChatModel | None = None
) -> ChatAnswering:
    """Answers on DynamoDB and the model the LLM settings give (or ``model``)."""
    model = model or build_chat_model(llm or load_settings(LLMSettings), responders=RESPONDERS)
    policy = ConversationPolicy(max_tokens=env.max_tokens, retry_backoff_s=env.retry_backoff_s)
    return ChatAnswering(
        store=DynamoChatStore(env.chat_table),
        conversation=AIConversationService(model, policy),
        hasher=AuditHasher(load_audit_salt(env.audit_salt, env.audit_salt_parameter)),
        settings=ChatSettings(
            history_window=env.history_window,
            budget=TokenBudget(model_context_limit=env.model_context_limit, response_max_tokens=env.max_tokens),
            ttl_days=env.ttl_days,
        ),
        live=live_channel(),
    )


def chat_turns(
    env: ChatEnvironment, llm: LLMSettings | None = None, *, model: ChatModel | None = None
) -> ProcessUserMessageUseCase:
    """The message route's use case: the user's rate limit and daily budget, and the worker's queue when set."""
    answering = chat_answering(env, llm, model=model)
    handover: Handover[PendingTurn] | None = None
    if env.answers_queue_url:
        pace = answering.conversation.pace
        shared = shared_pace(env, answering)
        handover = Handover(QueueSender(env.answers_queue_url), pace, answer_times(env.max_tokens), shared)
    limits = UserLimits(daily_budget(), DynamoRateLimiter(env.chat_table, env.rate_limit, env.rate_window_s))
    return ProcessUserMessageUseCase(answering, limits, handover)


def pending_answers(
    env: ChatEnvironment, llm: LLMSettings | None = None, *, model: ChatModel | None = None
) -> PendingAnswers:
    """The worker's part: accepted turns are answered, never limited again; their tokens count to the
    user's budget; the pace it learns is shared with the request."""
    answering = chat_answering(env, llm, model=model)
    return PendingAnswers(answering, UserLimits(daily_budget()), shared_pace(env, answering))


def shared_pace(env: ChatEnvironment, answering: ChatAnswering) -> SharedLearning:
    """The chat model's pace, shared by the request and its worker through the chat's table."""
    conversation = answering.conversation
    record = DynamoLearningRecord(env.chat_table)
    return SharedLearning(record, conversation.model.model_name, (SharedPace(conversation.speeds),))
