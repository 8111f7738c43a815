"""The chat API's answers as response models: the OpenAPI contract, and every answer is validated
against them before it leaves (``{aiResponse, conversation, usage}``, docs/chat-and-templates.md#one-chat-turn)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..llm.accounting import ModelAccountView
from ..response_model import ResponseModel
from .records import MessageKind, SessionContext


class SessionCreated(ResponseModel):
    session_id: str
    context: SessionContext
    created_at: str


class TemplateDraftView(ResponseModel):
    """What the LLMOutputParser made of the answer (docs/chat-and-templates.md#parser-error-classes)."""

    ok: bool
    schema_id: str | None = Field(alias="schema")
    error_class: Literal["MissingFence", "NonJsonFence", "JsonParseError", "SchemaMismatch", "ValidationFailed"] | None
    error_code: Literal["InvalidStructuredJson"] | None
    errors: list[str]
    step_count: int | None
    missing_information: list[str]


class ConversationMessageView(ResponseModel):
    seq: int = Field(ge=1)
    role: Literal["user", "assistant"]
    content: str
    created_at: str
    kind: MessageKind
    reply_to: int | None
    template_draft: TemplateDraftView | None = Field(
        description="null for user messages and for answers the model did not write"
    )


class AiResponseView(ConversationMessageView):
    fallback: bool = Field(description="the fallback answer: the provider failed; fixed content, usage 0, no JSON")
    error_code: Literal["OpenAIUnavailable", "RateLimited", "Timeout"] | None
    truncated: bool = Field(description="finish_reason=length: the answer was cut off (its JSON is stripped)")


class UsageView(ResponseModel):
    tokens: int = Field(ge=0, description="total tokens the API reported for this answer")
    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    cached_tokens: int = Field(default=0, ge=0, description="the part of promptTokens the prompt cache served")
    cost_usd: float | None = Field(default=None, description="null when the model has no price")
    account: ModelAccountView | None = Field(
        default=None, description="the answer's record: model, prompt version, tokens, billing and cost"
    )


class ChatMessageAnswer(ResponseModel):
    ai_response: AiResponseView
    conversation: list[ConversationMessageView] = Field(description="the session's latest messages, oldest first")
    usage: UsageView


class SessionSummaryView(ResponseModel):
    session_id: str
    context: SessionContext
    created_at: str
    updated_at: str = Field(description="the last message's time (createdAt before any)")


class SessionListAnswer(ResponseModel):
    items: list[SessionSummaryView] = Field(description="newest first; a page may hold fewer than limit")
    count: int = Field(ge=0)
    next_cursor: str | None = Field(description="the next page's cursor; null on the last page")


class SessionHistoryAnswer(SessionSummaryView):
    messages: list[ConversationMessageView] = Field(
        description="one page of the history, oldest first; the first page holds the latest messages"
    )
    next_cursor: str | None = Field(description="the cursor of older messages; null: none left")


class DeletedCountsView(ResponseModel):
    messages: int = Field(ge=0)
    drafts: int = Field(ge=0)
    audit_records: int = Field(ge=0)
    retry_records: int = Field(ge=0, description="stored answers of Idempotency-Key retries")


class SessionDeleted(ResponseModel):
    session_id: str
    deleted: DeletedCountsView
    templates_detached: int = Field(
        ge=0,
        description="templates created from this session: kept, without their reference to it",
    )


class TurnAcceptedView(ResponseModel):
    """202: the answer is being written by the worker; read it at ``answerUrl`` (the ``Location``)."""

    status: Literal["pending"]
    session_id: str
    message_seq: int = Field(ge=1, description="the user's message, stored")
    answer_seq: int = Field(ge=2)
    answer_url: str = Field(description="GET it for the answer: 200 when ready, 202 until then")
    retry_after_seconds: int = Field(ge=1, description="when to look first (Retry-After)")
    expected_seconds: int = Field(ge=0, description="how long the answer is expected to take at the model's pace")
