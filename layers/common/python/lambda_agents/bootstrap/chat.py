"""The chat turn's use case with its ports, for ChatFunction (the message route) and
ChatAnswerFunction (the turns answered after the request)."""

from __future__ import annotations

from ..chat.audit import AuditHasher, load_audit_salt
from ..chat.conversation import AIConversationService, ConversationPolicy
from ..chat.history import TokenBudget
from ..chat.offline import RESPONDERS
from ..chat.settings import ChatEnvironment
from ..chat.use_case import ChatSettings, ProcessUserMessageUseCase
from ..config import LLMSettings, load_settings
from ..llm.factory import build_chat_model
from ..llm.types import ChatModel
from ..storage.chat import DynamoChatStore, DynamoRateLimiter
from ..storage.queues import QueueSender
from .live import live_channel
from .spending import daily_budget


def chat_turns(
    env: ChatEnvironment, llm: LLMSettings | None = None, *, model: ChatModel | None = None
) -> ProcessUserMessageUseCase:
    """The use case on DynamoDB, SQS and the model the LLM settings give (or ``model``)."""
    model = model or build_chat_model(llm or load_settings(LLMSettings), responders=RESPONDERS)
    policy = ConversationPolicy(max_tokens=env.max_tokens, retry_backoff_s=env.retry_backoff_s)
    return ProcessUserMessageUseCase(
        store=DynamoChatStore(env.chat_table),
        rate_limiter=DynamoRateLimiter(env.chat_table, env.rate_limit, env.rate_window_s),
        conversation=AIConversationService(model, policy),
        hasher=AuditHasher(load_audit_salt(env.audit_salt, env.audit_salt_parameter)),
        settings=ChatSettings(
            history_window=env.history_window,
            budget=TokenBudget(model_context_limit=env.model_context_limit, response_max_tokens=env.max_tokens),
            ttl_days=env.ttl_days,
        ),
        answers=QueueSender(env.answers_queue_url) if env.answers_queue_url else None,
        budget=daily_budget(),
        live=live_channel(),
    )
