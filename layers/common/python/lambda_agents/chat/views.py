"""The chat API's answers as response models: the OpenAPI contract, and every answer is validated
against them before it leaves (spec 001 1.2 ``{aiResponse, conversation, usage}``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .records import MessageKind, SessionContext


class _View(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class SessionCreated(_View):
    session_id: str = Field(alias="sessionId")
    context: SessionContext
    created_at: str = Field(alias="createdAt")


class TemplateDraftView(_View):
    """What the LLMOutputParser made of the answer (spec 001 2.4 TemplateDraftParseResult)."""

    ok: bool
    schema_id: str | None = Field(alias="schema")
    error_class: (
        Literal["MissingFence", "NonJsonFence", "JsonParseError", "SchemaMismatch", "ValidationFailed"] | None
    ) = Field(alias="errorClass")
    error_code: Literal["InvalidStructuredJson"] | None = Field(alias="errorCode")
    errors: list[str]
    step_count: int | None = Field(alias="stepCount")
    missing_information: list[str] = Field(alias="missingInformation")


class ConversationMessageView(_View):
    seq: int = Field(ge=1)
    role: Literal["user", "assistant"]
    content: str
    created_at: str = Field(alias="createdAt")
    kind: MessageKind
    reply_to: int | None = Field(alias="replyTo")
    template_draft: TemplateDraftView | None = Field(
        alias="templateDraft", description="null for user messages and for answers the model did not write"
    )


class AiResponseView(ConversationMessageView):
    fallback: bool = Field(description="spec 001 D: the provider failed; fixed content, usage 0, no JSON")
    error_code: Literal["OpenAIUnavailable", "RateLimited", "Timeout"] | None = Field(alias="errorCode")
    truncated: bool = Field(description="finish_reason=length: the answer was cut off (its JSON is stripped)")


class UsageView(_View):
    tokens: int = Field(ge=0, description="total tokens the API reported for this answer")
    prompt_tokens: int = Field(alias="promptTokens", ge=0)
    completion_tokens: int = Field(alias="completionTokens", ge=0)
    cost_usd: float | None = Field(default=None, alias="costUsd", description="null when the model has no price")


class ChatMessageAnswer(_View):
    ai_response: AiResponseView = Field(alias="aiResponse")
    conversation: list[ConversationMessageView] = Field(description="the session's latest messages, oldest first")
    usage: UsageView
