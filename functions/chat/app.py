"""ChatFunction: the chat-message API (docs/chat-and-templates.md), Cognito-authorised.

- ``POST /ai-agent/sessions`` -> 201 ``{sessionId, context, createdAt}``: a session owned by the
  caller, with the SessionContextDto the system prompt is built from.
- ``POST /ai-agent/sessions/{sessionId}/messages`` -> 200 ``{aiResponse, conversation, usage}``:
  ``aiResponse.content`` is Japanese ending in the ``ai_chat_process_template.v1`` fence (or,
  when the model's JSON was invalid, without any JSON; ``aiResponse.templateDraft`` says which).
  Fallback D answers 200 too, with ``fallback: true`` and ``errorCode``. When the whole answer
  does not fit in API Gateway's 29 s at the model's pace (or the client sent
  ``Prefer: respond-async``) -> 202 ``{status: pending, answerUrl, ...}`` with ``Location`` and
  ``Retry-After``: the message is stored and ChatAnswerFunction writes the answer
  (``lambda_agents.chat.pending``). Another user's session is a 404; the per-user rate limit a
  429 with Retry-After, and so is a user whose daily token budget is spent
  (``DAILY_BUDGET_EXCEEDED``, until enough of the user's tokens are 24 hours old;
  ``lambda_agents.spending``);
  DynamoDB throttling a 503. With an ``Idempotency-Key`` header a retried message returns the
  first answer, a 202 included: no second model call, no second pair of stored messages
  (``lambda_agents.api.idempotency``); once the worker settled that 202's turn with the fallback
  answer, a retry asks the model again, as a new turn.
- ``GET /ai-agent/sessions/{sessionId}/messages/{seq}`` -> the answer of that seq, as the message
  route answers it (200), or 202 with ``Retry-After`` while the worker writes it.
- ``GET /ai-agent/sessions?limit=&cursor=`` -> the caller's sessions, newest first, paged.
- ``GET /ai-agent/sessions/{sessionId}?limit=&cursor=`` -> the session with its latest messages;
  ``nextCursor`` reaches older ones. Cursors are opaque and bound to the listing they came from.
- ``DELETE /ai-agent/sessions/{sessionId}`` -> the session and everything stored under it,
  retry records of its messages included; templates made from it stay, without the reference
  (``lambda_agents.chat.sessions``). Another user's session is a 404 on every route.

The user id is the token's ``sub`` from the request context, never a header. The model comes from
``llm.factory`` (openai only when AI_AGENT_MODE=openai, imported lazily); settings are in
``lambda_agents.chat.settings``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from lambda_agents.answered_later import TurnAccepted
from lambda_agents.api.idempotency import IdempotencyKey, IdempotentCall
from lambda_agents.api.identity import caller_user_id
from lambda_agents.api.prefer import PreferHeader
from lambda_agents.api.resolver import build_resolver, spending_user_tokens
from lambda_agents.api.socket_retries import forget_chat_messages
from lambda_agents.api.time_budget import request_deadline
from lambda_agents.api.turn_routes import TurnRoutes, accepted_turn_ended
from lambda_agents.bootstrap.chat import chat_turns
from lambda_agents.chat.answering import ProcessMessageInput
from lambda_agents.chat.records import SessionContext
from lambda_agents.chat.replies import ProcessMessageResult
from lambda_agents.chat.requests import (
    HISTORY_PAGE_MAX,
    SESSION_ID_MAX_CHARS,
    SESSION_ID_PATTERN,
    SESSIONS_PAGE_MAX,
    CreateSessionRequest,
    PostMessageRequest,
)
from lambda_agents.chat.sessions import ChatSessionsService
from lambda_agents.chat.settings import ChatEnvironment, SessionsEnvironment
from lambda_agents.chat.use_case import ProcessUserMessageUseCase
from lambda_agents.chat.views import (
    ChatMessageAnswer,
    SessionCreated,
    SessionDeleted,
    SessionHistoryAnswer,
    SessionListAnswer,
    TurnAcceptedView,
)
from lambda_agents.composition import CompositionRoot
from lambda_agents.config import LLMSettings, load_settings
from lambda_agents.live import emit_push_counts
from lambda_agents.llm.accounting import cost_of
from lambda_agents.llm.types import ChatModel
from lambda_agents.observability import logger, metrics
from lambda_agents.paging import CURSOR_PATTERN
from lambda_agents.storage.chat import DynamoChatStore
from lambda_agents.storage.templates import DynamoTemplateStore

app = build_resolver()
SEQ_PATTERN = r"^[1-9][0-9]{0,7}$"
SessionId = Annotated[
    str,
    Path(
        pattern=SESSION_ID_PATTERN,
        max_length=SESSION_ID_MAX_CHARS,
        description="the id POST /ai-agent/sessions returned",
    ),
]
Cursor = Annotated[
    str | None, Query(pattern=CURSOR_PATTERN, description="nextCursor of the previous page; absent: the first page")
]


@dataclass(frozen=True)
class Dependencies:
    environment: ChatEnvironment
    turns: ProcessUserMessageUseCase
    retry_safe: IdempotentCall
    build_sessions: Callable[[], ChatSessionsService]

    @cached_property
    def sessions(self) -> ChatSessionsService:
        """Built on the first request of a session route: the message routes do not depend on
        its settings (TEMPLATES_TABLE)."""
        return self.build_sessions()


def bootstrap(
    *,
    environment: ChatEnvironment | None = None,
    llm: LLMSettings | None = None,
    model: ChatModel | None = None,
    sessions: ChatSessionsService | None = None,
) -> Dependencies:
    """The function's composition root (``lambda_agents.composition``)."""
    environment = environment or load_settings(ChatEnvironment)
    retry_safe = IdempotentCall(
        _answer,
        table_name=environment.idempotency_table,
        key_fields=("userId", "sessionId", "idempotencyKey"),
        validated_field="message",
        # Fallback D is answered (and stored) but not kept under the key: a retry after the
        # provider recovers asks the model again instead of replaying the fallback. An accepted
        # turn (202) is kept: a client that lost it finds the same answer, not a second turn,
        # until the worker settles that turn with the fallback answer (``_turn_ended_unanswered``).
        keep=lambda answer: "aiResponse" not in answer or not answer["aiResponse"]["fallback"],
        stale=_turn_ended_unanswered,
    )
    return Dependencies(
        environment=environment,
        turns=chat_turns(environment, llm, model=model),
        retry_safe=retry_safe,
        build_sessions=(lambda: sessions) if sessions is not None else _session_service,
    )


def _session_service() -> ChatSessionsService:
    env = load_settings(SessionsEnvironment)
    return ChatSessionsService(
        store=DynamoChatStore(env.chat_table),
        retries=_SessionRetryRecords(),
        templates=DynamoTemplateStore(env.templates_table),
    )


dependencies = CompositionRoot(bootstrap)


@app.post("/ai-agent/sessions", status_code=201, summary="Start a chat session")
def create_session(body: Annotated[CreateSessionRequest | None, Body()] = None) -> SessionCreated:
    user_id = caller_user_id(app.current_event.raw_event)
    context = SessionContext() if body is None else body.context
    session = dependencies().turns.start_session(user_id, context)
    metrics.add_metric(name="ChatSessionsStarted", unit=MetricUnit.Count, value=1)
    return SessionCreated.model_validate(session.as_response())


ANSWERS = TurnRoutes(
    ChatMessageAnswer,
    TurnAcceptedView,
    url_field="answerUrl",
    request=app,
    answered_description="The answer",
    pending_description="Accepted: the answer is being written; GET the Location for it (Retry-After)",
)


@app.post(
    "/ai-agent/sessions/<sessionId>/messages",
    summary="Send a message; the answer ends with a JSON fence (200), or comes later at its Location (202)",
    responses=spending_user_tokens(ANSWERS.responses),
)
def post_message(
    sessionId: SessionId,  # noqa: N803 - the route's name
    body: PostMessageRequest,
    idempotency_key: IdempotencyKey = None,
    prefer: PreferHeader = None,
) -> Response[ChatMessageAnswer | TurnAcceptedView]:
    turn = {"userId": caller_user_id(app.current_event.raw_event), "sessionId": sessionId, "message": body.message}
    return ANSWERS.post(turn, prefer, idempotency_key, answer=_answer, retry_safe=lambda: dependencies().retry_safe)


@app.get(
    "/ai-agent/sessions/<sessionId>/messages/<seq>",
    summary="Read an answer: 200 when it is there, 202 while it is being written",
    responses=ANSWERS.responses,
)
def read_answer(
    sessionId: SessionId,  # noqa: N803 - the route's name
    seq: Annotated[
        str, Path(pattern=SEQ_PATTERN, max_length=8, description="answerSeq of the 202 (an assistant message's seq)")
    ],
) -> Response[ChatMessageAnswer | TurnAcceptedView]:
    user_id = caller_user_id(app.current_event.raw_event)
    return ANSWERS.read(dependencies().turns.read_answer(user_id, sessionId, int(seq)))


def _answer(turn: dict[str, Any]) -> dict[str, Any]:
    request = ProcessMessageInput(
        session_id=turn["sessionId"],
        user_id=turn["userId"],
        message=turn["message"],
        idempotency_key=turn.get("idempotencyKey"),
    )
    deadline = request_deadline(app.current_event.raw_event, app.lambda_context)
    turns = dependencies().turns
    try:
        result = turns.execute(request, deadline, prefer_later=bool(turn.get("respondAsync")))
    finally:
        emit_push_counts(turns.answering.live)  # what the answer's frames met
    if isinstance(result, TurnAccepted):
        metrics.add_metric(name="ChatTurnsHandedOver", unit=MetricUnit.Count, value=1)
        return result.as_response()
    _emit(result)
    return result.as_response()


def _turn_ended_unanswered(turn: dict[str, Any], kept: dict[str, Any]) -> bool:
    """Whether a kept 202 no longer holds: its turn's answer is the fallback answer (the worker
    could not reach the model), or its session is gone. The retry then asks the model again, as a
    new turn, as after a fallback answer given in the request."""
    return accepted_turn_ended(
        kept,
        lambda: dependencies().turns.read_answer(turn["userId"], turn["sessionId"], int(kept["answerSeq"])),
        unanswered=lambda found: isinstance(found, ProcessMessageResult) and found.fallback,
    )


class _SessionRetryRecords:
    """The retry records of a session's messages, computed by the same Powertools wiring as the
    routes that kept them (``IdempotentCall.forget``): the message route's Idempotency-Keys and
    the WebSocket's clientMessageIds (``socket_retries``, the same table under its own prefix)."""

    def forget(
        self, user_id: str, session_id: str, idempotency_keys: Sequence[str], client_message_ids: Sequence[str]
    ) -> int:
        forgotten = forget_chat_messages(
            dependencies().environment.idempotency_table, user_id, session_id, client_message_ids
        )
        if not idempotency_keys:
            return forgotten
        payloads = [{"userId": user_id, "sessionId": session_id, "idempotencyKey": key} for key in idempotency_keys]
        return forgotten + dependencies().retry_safe.forget(payloads)


@app.get("/ai-agent/sessions", summary="List the caller's sessions, newest first")
def list_sessions(
    limit: Annotated[int, Query(ge=1, le=SESSIONS_PAGE_MAX)] = 20,
    cursor: Cursor = None,
) -> SessionListAnswer:
    user_id = caller_user_id(app.current_event.raw_event)
    listing = dependencies().sessions.list(user_id, limit, cursor)
    return SessionListAnswer.model_validate(listing.as_response())


@app.get("/ai-agent/sessions/<sessionId>", summary="Read a session with its latest messages (older ones by cursor)")
def read_session(
    sessionId: SessionId,  # noqa: N803 - the route's name
    limit: Annotated[int, Query(ge=1, le=HISTORY_PAGE_MAX)] = 50,
    cursor: Cursor = None,
) -> SessionHistoryAnswer:
    user_id = caller_user_id(app.current_event.raw_event)
    history = dependencies().sessions.read(user_id, sessionId, limit, cursor)
    return SessionHistoryAnswer.model_validate(history.as_response())


@app.delete("/ai-agent/sessions/<sessionId>", summary="Delete a session and everything stored under it")
def delete_session(sessionId: SessionId) -> SessionDeleted:  # noqa: N803 - the route's name
    user_id = caller_user_id(app.current_event.raw_event)
    deletion = dependencies().sessions.delete(user_id, sessionId)
    answer = deletion.as_response()
    metrics.add_metric(name="ChatSessionsDeleted", unit=MetricUnit.Count, value=1)
    logger.info("chat session deleted", extra={"session_id": sessionId, **answer["deleted"]})
    return SessionDeleted.model_validate(answer)


def _emit(result: ProcessMessageResult) -> None:
    metrics.add_metric(name="ChatMessages", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="ChatFallbacks", unit=MetricUnit.Count, value=int(result.fallback))
    draft = result.assistant.template_draft
    metrics.add_metric(name="ChatTemplateJsonValid", unit=MetricUnit.Count, value=int(bool(draft and draft.ok)))
    metrics.add_metric(name="ChatTokens", unit=MetricUnit.Count, value=result.usage.total_tokens)
    metrics.add_metric(name="CachedInputTokens", unit=MetricUnit.Count, value=result.usage.cached_prompt_tokens)
    # What the answer's calls cost at the price table's prices (the dashboard's cost widget).
    metrics.add_metric(name="ModelCostUsd", unit=MetricUnit.NoUnit, value=cost_of(result.account))


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    metrics.add_metric(name="ChatRequests", unit=MetricUnit.Count, value=1)
    return app.resolve(event, context)
