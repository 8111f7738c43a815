"""What the chat stores, and the errors its callers act on (docs/chat-and-templates.md#storage).

A session belongs to one user (the Cognito ``sub``); its messages are numbered by a per-session
counter, so their order is stable. An assistant message that carried a valid
``ai_chat_process_template.v1`` JSON is stored with a separate draft record (the validated JSON),
which ``POST /ai-agent/sessions/{id}/process-template`` reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import DomainError

CONTEXT_FIELD_MAX_CHARS = 200
ADDITIONAL_CONTEXT_MAX_CHARS = 2000


class SessionNotFound(DomainError):
    """No such session, or not the caller's (both answer 404: ids of others are not disclosed)."""

    status = 404
    code = "SESSION_NOT_FOUND"

    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session {session_id!r}")
        self.session_id = session_id


class NoTemplateDraft(DomainError):
    """The session has no assistant answer with a valid template JSON yet."""

    status = 409
    code = "NO_TEMPLATE_DRAFT"

    def __init__(self, session_id: str) -> None:
        super().__init__("the session has no answer with a valid template draft yet")
        self.session_id = session_id


class SessionContext(BaseModel):
    """SessionContextDto: what the PromptBuilder writes into the system prompt
    (docs/chat-and-templates.md#sessions-and-their-context)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    industry: str | None = Field(default=None, max_length=CONTEXT_FIELD_MAX_CHARS)
    process_type: str | None = Field(default=None, alias="processType", max_length=CONTEXT_FIELD_MAX_CHARS)
    goal: str | None = Field(default=None, max_length=CONTEXT_FIELD_MAX_CHARS)
    region: str | None = Field(default=None, max_length=CONTEXT_FIELD_MAX_CHARS)
    compliance: str | None = Field(default=None, max_length=CONTEXT_FIELD_MAX_CHARS)
    additional_context: str | None = Field(
        default=None, alias="additionalContext", max_length=ADDITIONAL_CONTEXT_MAX_CHARS
    )

    def as_dict(self) -> dict[str, str | None]:
        return self.model_dump(by_alias=True)

    def template_name(self) -> str:
        """The name a template drafted without one gets: from the process type or the goal."""
        for value in (self.process_type, self.goal, self.industry):
            if value and value.strip():
                return f"{value.strip()[:150]}のプロセス"
        return "AIチャットで作成したプロセス"


@dataclass(frozen=True)
class SessionRecord:
    session_id: str
    user_id: str
    context: SessionContext
    created_at: str
    message_count: int = 0
    updated_at: str = ""
    # Random, kept only in the session item: the ids of templates made from the session's drafts
    # derive from it, so once the session is deleted nothing links them to it (empty: a session
    # stored before it existed, whose templates derive from the session id).
    template_seed: str = ""

    @property
    def template_link(self) -> str:
        return self.template_seed or self.session_id

    def as_response(self) -> dict[str, Any]:
        return {"sessionId": self.session_id, "context": self.context.as_dict(), "createdAt": self.created_at}

    def as_summary(self) -> dict[str, Any]:
        """What a session listing shows: no message text, no counters."""
        return {**self.as_response(), "updatedAt": self.updated_at or self.created_at}


class MessageKind(StrEnum):
    """What produced a message. Only ``message`` and ``answer`` are sent back to the model as
    history: the fixed texts of a fallback, refusal or filtered answer are not what it said."""

    MESSAGE = "message"  # the user's
    ANSWER = "answer"  # the model's answer (truncated ones included)
    FALLBACK = "fallback"  # the fallback answer: the provider failed (docs/chat-and-templates.md#the-fallback-answer)
    REFUSAL = "refusal"
    FILTERED = "content_filter"


@dataclass(frozen=True)
class DraftStatus:
    """What the LLMOutputParser made of an answer: its TemplateDraftParseResult, as stored
    (docs/chat-and-templates.md#parser-error-classes)."""

    ok: bool
    schema: str | None
    error_class: str | None
    error_code: str | None
    errors: tuple[str, ...] = ()
    step_count: int | None = None
    missing_information: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "schema": self.schema,
            "errorClass": self.error_class,
            "errorCode": self.error_code,
            "errors": list(self.errors),
            "stepCount": self.step_count,
            "missingInformation": list(self.missing_information),
        }

    @classmethod
    def from_dict(cls, value: dict[str, Any]) -> DraftStatus:
        return cls(
            ok=bool(value.get("ok")),
            schema=value.get("schema"),
            error_class=value.get("errorClass"),
            error_code=value.get("errorCode"),
            errors=tuple(value.get("errors") or ()),
            step_count=value.get("stepCount"),
            missing_information=tuple(value.get("missingInformation") or ()),
        )


@dataclass(frozen=True)
class StoredMessage:
    seq: int
    role: Literal["user", "assistant"]
    content: str
    created_at: str
    kind: MessageKind
    reply_to: int | None = None
    template_draft: DraftStatus | None = None

    @property
    def in_history(self) -> bool:
        return self.kind in (MessageKind.MESSAGE, MessageKind.ANSWER)

    def as_response(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "role": self.role,
            "content": self.content,
            "createdAt": self.created_at,
            "kind": self.kind.value,
            "replyTo": self.reply_to,
            "templateDraft": None if self.template_draft is None else self.template_draft.as_dict(),
        }


@dataclass(frozen=True)
class DraftRecord:
    """The validated JSON of one assistant answer (the AI-input shape, docs/chat-and-templates.md#the-draft-schema)."""

    session_id: str
    seq: int
    payload: dict[str, Any]
    created_at: str
