"""A chat turn's answer as the chat keeps it and answers it (docs/chat-and-templates.md#one-chat-turn):
the model's answer read (a refusal, a filtered or an empty answer get their fixed texts; otherwise
the template JSON is extracted and the content ends with the canonical fence, or carries no JSON at
all), the fallback answer, and the turn's result as the message route answers it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..llm.accounting import ModelAccount
from ..llm.types import Usage
from ..observability import logger
from .answers import FALLBACK_CONTENT, FILTERED_CONTENT, REFUSAL_CONTENT, AIConversationErrorCode
from .conversation import ModelAnswer
from .output_parser import LLMOutputParser, TemplateDraftParseResult, compose_content
from .records import DraftStatus, MessageKind, StoredMessage


@dataclass(frozen=True)
class Reply:
    """The answer to store: its kind and content, what its calls cost, and why it is a fallback."""

    kind: MessageKind
    content: str
    usage: Usage
    retry_count: int
    duration_ms: int
    model: str
    finish_reason: str | None = None
    error_type: str | None = None
    error_code: str | None = None
    draft: TemplateDraftParseResult | None = None
    account: ModelAccount | None = None  # None only for an answer no model call was made for

    @property
    def cost_usd(self) -> float | None:
        return self.account.cost_usd if self.account is not None and self.usage.total_tokens else None

    def after(self, earlier: ModelAccount) -> Reply:
        """This reply with the calls made for its turn before it (a request's, cut short and handed
        over) counted in: its usage and account are then all its turn cost."""
        account = earlier if self.account is None else earlier + self.account
        return replace(self, usage=earlier.usage + self.usage, account=account)


def read_reply(answer: ModelAnswer, parser: LLMOutputParser) -> Reply:
    """The model's answer as the client will see it; an answer without valid template JSON is logged by its class."""
    response = answer.response
    base = Reply(
        MessageKind.ANSWER,
        "",
        answer.usage,
        answer.retry_count,
        answer.duration_ms,
        answer.model,
        finish_reason=response.finish_reason,
        account=answer.account,
    )
    if response.refusal:
        return replace(base, kind=MessageKind.REFUSAL, content=REFUSAL_CONTENT, error_type="refusal")
    if response.finish_reason == "content_filter":
        return replace(base, kind=MessageKind.FILTERED, content=FILTERED_CONTENT, error_type="content_filter")
    text = _encodable(response.content or "")
    if not text.strip():
        code = AIConversationErrorCode.OPENAI_UNAVAILABLE.value
        return replace(
            base, kind=MessageKind.FALLBACK, content=FALLBACK_CONTENT, error_type="empty_answer", error_code=code
        )
    parsed = parser.extract_template_json(text)
    if not parsed.ok:
        logger.warning(
            "chat answer without a valid template JSON",
            extra={"error_class": parsed.error_class, "error_count": len(parsed.errors)},
        )
    return replace(base, content=compose_content(text, parsed), draft=parsed)


def fallback_reply(
    error_type: str,
    error_code: AIConversationErrorCode,
    retry_count: int,
    duration_ms: int,
    model: str,
    usage: Usage | None = None,
    account: ModelAccount | None = None,
) -> Reply:
    """The fallback answer: the fixed text, the tokens the failed attempts were billed for (none
    when no attempt reached the model), the error that caused it
    (docs/chat-and-templates.md#the-fallback-answer)."""
    return Reply(
        MessageKind.FALLBACK,
        FALLBACK_CONTENT,
        usage or Usage(),
        retry_count,
        duration_ms,
        model,
        error_type=error_type,
        error_code=error_code.value,
        account=account,
    )


def draft_status(parsed: TemplateDraftParseResult | None) -> DraftStatus | None:
    if parsed is None:
        return None
    data = parsed.data
    draft = None if data is None else data.process_template_draft
    return DraftStatus(
        ok=parsed.ok,
        schema=parsed.schema,
        error_class=parsed.error_class,
        error_code=parsed.error_code,
        errors=tuple(parsed.errors),
        step_count=None if draft is None else len(draft.step_templates),
        missing_information=tuple(data.missing_information or ()) if data is not None else (),
    )


def prose(content: str) -> str:
    """The answer without its fence: the JSON's keys are English by the schema's design."""
    fence = content.find("```")
    return content if fence < 0 else content[:fence]


def _encodable(text: str) -> str:
    """Model text with any lone surrogate replaced: DynamoDB stores UTF-8 only."""
    return text.encode("utf-8", "replace").decode("utf-8")


@dataclass(frozen=True)
class ProcessMessageResult:
    assistant: StoredMessage
    conversation: list[StoredMessage]
    usage: Usage
    cost_usd: float | None
    error_code: str | None
    truncated: bool
    account: ModelAccount | None = None

    @property
    def fallback(self) -> bool:
        return self.assistant.kind is MessageKind.FALLBACK

    @classmethod
    def stored(cls, answer: StoredMessage, recent: list[StoredMessage], audit: dict[str, Any]) -> ProcessMessageResult:
        """A stored answer as its turn answered it, from its audit record."""
        account = ModelAccount.from_dict(audit["account"]) if isinstance(audit.get("account"), dict) else None
        usage = Usage(
            int(audit.get("promptTokens") or 0),
            int(audit.get("completionTokens") or 0),
            cached_prompt_tokens=0 if account is None else account.usage.cached_prompt_tokens,
        )
        return cls(
            assistant=answer,
            conversation=recent,
            usage=usage,
            cost_usd=audit.get("costUsd"),
            error_code=audit.get("errorCode"),
            truncated=audit.get("finishReason") == "length",
            account=account,
        )

    def as_response(self) -> dict[str, Any]:
        """``{aiResponse, conversation, usage}`` (docs/chat-and-templates.md#one-chat-turn)."""
        usage = {
            "tokens": self.usage.total_tokens,
            "promptTokens": self.usage.prompt_tokens,
            "completionTokens": self.usage.completion_tokens,
            "cachedTokens": self.usage.cached_prompt_tokens,
            "costUsd": self.cost_usd,
            "account": None if self.account is None else self.account.as_dict(),
        }
        return {
            "aiResponse": {
                **self.assistant.as_response(),
                "fallback": self.fallback,
                "errorCode": self.error_code,
                "truncated": self.truncated,
            },
            "conversation": [message.as_response() for message in self.conversation],
            "usage": usage,
        }
