"""ProcessUserMessageUseCase (spec 001 1.2 / 4.1): one chat turn, with nothing lost.

Order of work, and why:
1. The session must be the caller's (another user's answers 404, like a missing one).
2. The per-user rate limit (a sliding window, ``rate_limit``) is taken before anything is
   stored: a 429 leaves no trace, and the client retries the same message after Retry-After. A
   message that is then not stored (409, 503) gives its place back: only accepted ones count.
3. The user's message is stored BEFORE the model is called (it reserves the next seq for the
   answer, so a turn's two messages are adjacent even when two turns overlap).
4. PromptBuilder + HistoryAssembler (window, budget C) + the new message -> the model
   (AIConversationService: temperature 0.3, max_tokens 1200, one retry after 1.5 s, deadline).
5. The answer is read: refusal / content_filter / empty get their fixed texts; otherwise the
   LLMOutputParser extracts the JSON, and the content the client sees ends with the canonical
   fence, or carries no JSON at all when the JSON was invalid (the class is logged).
   ``finish_reason=length`` is an answer like any other, marked ``truncated``: its unclosed
   fence fails as JsonParseError and is stripped, so no broken fence reaches the client.
6. The assistant message (fallback D included), the validated draft and the audit record are
   written in ONE transaction AFTER the call.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from ..clock import utc_now
from ..japanese import is_japanese_prose
from ..llm.policy import Deadline
from ..llm.types import Usage
from ..observability import logger
from .answers import FALLBACK_CONTENT, FILTERED_CONTENT, REFUSAL_CONTENT, AIConversationErrorCode
from .audit import AuditHasher, TurnAudit
from .conversation import AIConversationService, ConversationUnavailable, ModelAnswer
from .history import ChatMessage, HistoryAssembler, HistoryOptions, TokenBudget, history_budget
from .output_parser import LLMOutputParser, TemplateDraftParseResult, compose_content
from .pricing import cost_usd
from .prompt import PromptBuilder
from .records import (
    DraftRecord,
    DraftStatus,
    MessageKind,
    SessionContext,
    SessionNotFound,
    SessionRecord,
    StoredMessage,
)

CONVERSATION_LIMIT = 50


class ChatStore(Protocol):
    def create_session(self, session: SessionRecord, expires_at: int) -> None: ...

    def get_session(self, session_id: str) -> SessionRecord | None: ...

    def append_user_message(
        self,
        session: SessionRecord,
        content: str,
        created_at: str,
        expires_at: int,
        idempotency_key: str | None = None,
    ) -> int:
        """Store the message under the next seq, reserve the one after for the answer; return the
        message's seq. ``idempotency_key`` is kept with the message so that deleting the session
        can delete the retry record that holds a copy of its answer."""
        ...

    def recent_messages(self, session_id: str, limit: int) -> list[StoredMessage]:
        """The newest ``limit`` messages, in order (strongly consistent)."""
        ...

    def append_assistant_turn(
        self, session_id: str, message: StoredMessage, draft: DraftRecord | None, audit: TurnAudit, expires_at: int
    ) -> None:
        """Store the answer, its draft and its audit record atomically."""
        ...


class RateLimiter(Protocol):
    def acquire(self, user_id: str) -> float | None:
        """None when the call may go ahead (its place is taken), else the seconds until it may."""
        ...

    def release(self, user_id: str) -> None:
        """Give back the place the last ``acquire`` took: the message was not accepted."""
        ...


class RateLimitExceeded(RuntimeError):
    def __init__(self, retry_after_s: float) -> None:
        super().__init__(f"too many messages; retry in {retry_after_s:.0f} s")
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class ChatSettings:
    history_window: int = 12
    budget: TokenBudget = field(default_factory=lambda: TokenBudget(model_context_limit=128_000))
    ttl_days: int = 90
    conversation_limit: int = CONVERSATION_LIMIT


@dataclass(frozen=True)
class ProcessMessageInput:
    """Spec 001 2.3."""

    session_id: str
    user_id: str
    message: str
    history_window: int | None = None
    idempotency_key: str | None = None


@dataclass(frozen=True)
class _Reply:
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

    @property
    def cost_usd(self) -> float | None:
        return cost_usd(self.model, self.usage) if self.usage.total_tokens else None


@dataclass(frozen=True)
class ProcessMessageResult:
    assistant: StoredMessage
    conversation: list[StoredMessage]
    usage: Usage
    cost_usd: float | None
    error_code: str | None
    truncated: bool

    @property
    def fallback(self) -> bool:
        return self.assistant.kind is MessageKind.FALLBACK

    def as_response(self) -> dict[str, Any]:
        """``{aiResponse, conversation, usage}`` (spec 001 1.2)."""
        usage = {
            "tokens": self.usage.total_tokens,
            "promptTokens": self.usage.prompt_tokens,
            "completionTokens": self.usage.completion_tokens,
            "costUsd": self.cost_usd,
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


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


@dataclass
class ProcessUserMessageUseCase:
    store: ChatStore
    rate_limiter: RateLimiter
    conversation: AIConversationService
    hasher: AuditHasher
    settings: ChatSettings = field(default_factory=ChatSettings)
    prompt_builder: PromptBuilder = field(default_factory=PromptBuilder)
    history: HistoryAssembler = field(default_factory=HistoryAssembler)
    parser: LLMOutputParser = field(default_factory=LLMOutputParser)
    clock: Callable[[], datetime] = utc_now
    new_id: Callable[[], str] = lambda: uuid.uuid4().hex

    def start_session(self, user_id: str, context: SessionContext) -> SessionRecord:
        now = self.clock()
        session = SessionRecord(self.new_id(), user_id, context, iso(now))
        self.store.create_session(session, self._expires_at(now))
        return session

    def execute(self, request: ProcessMessageInput, deadline: Deadline | None = None) -> ProcessMessageResult:
        session = self.store.get_session(request.session_id)
        if session is None or session.user_id != request.user_id:
            raise SessionNotFound(request.session_id)
        wait = self.rate_limiter.acquire(request.user_id)
        if wait is not None:
            raise RateLimitExceeded(wait)
        now = self.clock()
        try:
            user_seq = self.store.append_user_message(
                session, request.message, iso(now), self._expires_at(now), idempotency_key=request.idempotency_key
            )
        except Exception:
            # Not accepted (a concurrent change: 409, storage busy: 503): it must not count.
            self.rate_limiter.release(request.user_id)
            raise
        recent = self.store.recent_messages(session.session_id, self.settings.conversation_limit)
        messages = self._messages(session, request, [m for m in recent if m.seq < user_seq])
        reply = self._ask(messages, deadline)
        assistant = self._store_answer(session, request, user_seq, reply, history_messages=len(messages) - 2)
        conversation = sorted([*(m for m in recent if m.seq != assistant.seq), assistant], key=lambda m: m.seq)
        return ProcessMessageResult(
            assistant=assistant,
            conversation=conversation[-self.settings.conversation_limit :],
            usage=reply.usage,
            cost_usd=reply.cost_usd,
            error_code=reply.error_code,
            truncated=reply.finish_reason == "length",
        )

    def _ask(self, messages: list[ChatMessage], deadline: Deadline | None) -> _Reply:
        try:
            return self._read(self.conversation.process_message(messages, deadline))
        except ConversationUnavailable as failure:
            return _Reply(
                MessageKind.FALLBACK,
                FALLBACK_CONTENT,
                Usage(),
                failure.retry_count,
                failure.duration_ms,
                failure.model,
                error_type=failure.error_type,
                error_code=failure.error_code.value,
            )

    def _store_answer(
        self, session: SessionRecord, request: ProcessMessageInput, user_seq: int, reply: _Reply, history_messages: int
    ) -> StoredMessage:
        """The answer, its validated draft (if any) and its audit record, in one write."""
        answered = self.clock()
        assistant = StoredMessage(
            seq=user_seq + 1,
            role="assistant",
            content=reply.content,
            created_at=iso(answered),
            kind=reply.kind,
            reply_to=user_seq,
            template_draft=_draft_status(reply.draft),
        )
        data = None if reply.draft is None else reply.draft.data
        draft = None
        if data is not None and data.process_template_draft is not None:
            draft = DraftRecord(session.session_id, assistant.seq, data.as_json(), assistant.created_at)
        audit = self._audit(session, assistant, reply, request.message, history_messages)
        self.store.append_assistant_turn(session.session_id, assistant, draft, audit, self._expires_at(answered))
        logger.info("chat turn", extra=audit.as_dict())
        return assistant

    def _messages(
        self, session: SessionRecord, request: ProcessMessageInput, earlier: list[StoredMessage]
    ) -> list[ChatMessage]:
        system = self.prompt_builder.build_system_prompt(session.context)
        budget = history_budget(self.settings.budget, system, request.message)
        window = request.history_window or self.settings.history_window
        history = self.history.build(earlier, HistoryOptions(window_size=window, max_tokens_budget=budget))
        return [
            ChatMessage(role="system", content=system),
            *history,
            ChatMessage(role="user", content=request.message),
        ]

    def _read(self, answer: ModelAnswer) -> _Reply:
        response = answer.response
        base = _Reply(
            MessageKind.ANSWER,
            "",
            answer.usage,
            answer.retry_count,
            answer.duration_ms,
            answer.model,
            finish_reason=response.finish_reason,
        )
        if response.refusal:
            return replace(base, kind=MessageKind.REFUSAL, content=REFUSAL_CONTENT, error_type="refusal")
        if response.finish_reason == "content_filter":
            return replace(base, kind=MessageKind.FILTERED, content=FILTERED_CONTENT, error_type="content_filter")
        text = _encodable(response.content or "")
        if not text.strip():
            return replace(
                base,
                kind=MessageKind.FALLBACK,
                content=FALLBACK_CONTENT,
                error_type="empty_answer",
                error_code=AIConversationErrorCode.OPENAI_UNAVAILABLE.value,
            )
        parsed = self.parser.extract_template_json(text)
        if not parsed.ok:
            logger.warning(
                "chat answer without a valid template JSON",
                extra={"error_class": parsed.error_class, "error_count": len(parsed.errors)},
            )
        return replace(base, content=compose_content(text, parsed), draft=parsed)

    def _audit(
        self,
        session: SessionRecord,
        assistant: StoredMessage,
        reply: _Reply,
        user_message: str,
        history_messages: int,
    ) -> TurnAudit:
        answered = reply.kind is MessageKind.ANSWER
        return TurnAudit(
            session_id=session.session_id,
            seq=assistant.seq,
            outcome=reply.kind.value,
            error_type=reply.error_type,
            error_code=reply.error_code,
            retry_count=reply.retry_count,
            duration_ms=reply.duration_ms,
            finish_reason=reply.finish_reason,
            schema_id=None if reply.draft is None else reply.draft.schema,
            parse_error_class=None if reply.draft is None else reply.draft.error_class,
            prompt_tokens=reply.usage.prompt_tokens,
            completion_tokens=reply.usage.completion_tokens,
            cost_usd=reply.cost_usd,
            model=reply.model,
            exchange_hash=self.hasher.hash_messages([("user", user_message), ("assistant", assistant.content)]),
            history_messages=max(0, history_messages),
            answer_in_japanese=is_japanese_prose(_prose(assistant.content)) if answered else None,
        )

    def _expires_at(self, moment: datetime) -> int:
        return int((moment + timedelta(days=self.settings.ttl_days)).timestamp())


def _draft_status(parsed: TemplateDraftParseResult | None) -> DraftStatus | None:
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


def _prose(content: str) -> str:
    """The answer without its fence: the JSON's keys are English by the schema's design."""
    fence = content.find("```")
    return content if fence < 0 else content[:fence]


def _encodable(text: str) -> str:
    """Model text with any lone surrogate replaced: DynamoDB stores UTF-8 only."""
    return text.encode("utf-8", "replace").decode("utf-8")
