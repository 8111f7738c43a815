"""ChatFunction: the chat-message API (spec 001), Cognito-authorised.

- ``POST /ai-agent/sessions`` -> 201 ``{sessionId, context, createdAt}``: a session owned by the
  caller, with the SessionContextDto the system prompt is built from.
- ``POST /ai-agent/sessions/{sessionId}/messages`` -> 200 ``{aiResponse, conversation, usage}``:
  ``aiResponse.content`` is Japanese ending in the ``ai_chat_process_template.v1`` fence (or,
  when the model's JSON was invalid, without any JSON; ``aiResponse.templateDraft`` says which).
  Fallback D answers 200 too, with ``fallback: true`` and ``errorCode``. Another user's session
  is a 404; the per-user rate limit a 429 with Retry-After; DynamoDB throttling a 503. With an
  ``Idempotency-Key`` header a retried message returns the first answer: no second model call,
  no second pair of stored messages (``lambda_agents.api.idempotency``).

The user id is the token's ``sub`` from the request context, never a header. The model comes from
``llm.factory`` (openai only when AI_AGENT_MODE=openai, imported lazily); settings are in
``lambda_agents.chat.settings``.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Body, Path
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from lambda_agents.api.errors import NotFound, TooManyRequests
from lambda_agents.api.idempotency import IdempotencyKey, IdempotentCall
from lambda_agents.api.identity import caller_user_id
from lambda_agents.api.resolver import build_resolver
from lambda_agents.api.time_budget import request_deadline
from lambda_agents.chat.audit import AuditHasher, load_audit_salt
from lambda_agents.chat.conversation import AIConversationService, ConversationPolicy
from lambda_agents.chat.history import TokenBudget
from lambda_agents.chat.offline import RESPONDERS
from lambda_agents.chat.records import SessionContext, SessionNotFound
from lambda_agents.chat.requests import SESSION_ID_PATTERN, CreateSessionRequest, PostMessageRequest
from lambda_agents.chat.settings import ChatEnvironment
from lambda_agents.chat.use_case import (
    ChatSettings,
    ProcessMessageInput,
    ProcessMessageResult,
    ProcessUserMessageUseCase,
    RateLimitExceeded,
)
from lambda_agents.chat.views import ChatMessageAnswer, SessionCreated
from lambda_agents.config import LLMSettings, load_settings
from lambda_agents.llm.factory import build_chat_model
from lambda_agents.observability import logger, metrics
from lambda_agents.storage.chat import DynamoChatStore, DynamoRateLimiter

app = build_resolver()
_context: dict[str, Any] = {}
SessionId = Annotated[str, Path(pattern=SESSION_ID_PATTERN, description="the id POST /ai-agent/sessions returned")]


@cache
def _environment() -> ChatEnvironment:
    return load_settings(ChatEnvironment)


@cache
def _use_case() -> ProcessUserMessageUseCase:
    env = _environment()
    llm = load_settings(LLMSettings)
    policy = ConversationPolicy(
        max_tokens=env.max_tokens, retry_backoff_s=env.retry_backoff_s, request_timeout_s=llm.request_timeout_s
    )
    return ProcessUserMessageUseCase(
        store=DynamoChatStore(env.chat_table),
        rate_limiter=DynamoRateLimiter(env.chat_table, env.rate_limit, env.rate_window_s),
        conversation=AIConversationService(build_chat_model(llm, responders=RESPONDERS), policy),
        hasher=AuditHasher(load_audit_salt(env.audit_salt, env.audit_salt_parameter)),
        settings=ChatSettings(
            history_window=env.history_window,
            budget=TokenBudget(model_context_limit=env.model_context_limit, response_max_tokens=env.max_tokens),
            ttl_days=env.ttl_days,
        ),
    )


@app.post("/ai-agent/sessions", status_code=201, summary="Start a chat session")
def create_session(body: Annotated[CreateSessionRequest | None, Body()] = None) -> SessionCreated:
    user_id = caller_user_id(app.current_event.raw_event)
    context = SessionContext() if body is None else body.context
    session = _use_case().start_session(user_id, context)
    metrics.add_metric(name="ChatSessionsStarted", unit=MetricUnit.Count, value=1)
    return SessionCreated.model_validate(session.as_response())


@cache
def _retry_safe() -> IdempotentCall:
    return IdempotentCall(
        _answer,
        table_name=_environment().idempotency_table,
        key_fields=("userId", "sessionId", "idempotencyKey"),
        validated_field="message",
    )


@app.post("/ai-agent/sessions/<sessionId>/messages", summary="Send a message; the answer ends with a JSON fence")
def post_message(
    sessionId: SessionId,  # noqa: N803 - the route's name
    body: PostMessageRequest,
    idempotency_key: IdempotencyKey = None,
) -> ChatMessageAnswer:
    turn = {"userId": caller_user_id(app.current_event.raw_event), "sessionId": sessionId, "message": body.message}
    if idempotency_key is None:
        return ChatMessageAnswer.model_validate(_answer(turn))
    retry_safe = _retry_safe()
    retry_safe.register_lambda_context(_context.get("lambda"))
    return ChatMessageAnswer.model_validate(retry_safe({**turn, "idempotencyKey": idempotency_key}))


def _answer(turn: dict[str, Any]) -> dict[str, Any]:
    request = ProcessMessageInput(session_id=turn["sessionId"], user_id=turn["userId"], message=turn["message"])
    try:
        deadline = request_deadline(app.current_event.raw_event, _context.get("lambda"))
        result = _use_case().execute(request, deadline)
    except SessionNotFound:
        raise NotFound(f"no session {turn['sessionId']!r}", code="SESSION_NOT_FOUND") from None
    except RateLimitExceeded as error:
        raise TooManyRequests(str(error), retry_after_s=int(error.retry_after_s + 0.999)) from None
    _emit(result)
    return result.as_response()


def _emit(result: ProcessMessageResult) -> None:
    metrics.add_metric(name="ChatMessages", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="ChatFallbacks", unit=MetricUnit.Count, value=int(result.fallback))
    draft = result.assistant.template_draft
    metrics.add_metric(name="ChatTemplateJsonValid", unit=MetricUnit.Count, value=int(bool(draft and draft.ok)))
    metrics.add_metric(name="ChatTokens", unit=MetricUnit.Count, value=result.usage.total_tokens)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    metrics.add_metric(name="ChatRequests", unit=MetricUnit.Count, value=1)
    _context["lambda"] = context
    return app.resolve(event, context)
