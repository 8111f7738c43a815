"""ProcessUserMessageUseCase (docs/chat-and-templates.md#one-chat-turn): one chat turn, with nothing lost.

Order of work, and why:
1. The session must be the caller's (another user's answers 404, like a missing one).
2. The per-user rate limit (a sliding window, ``rate_limit``) is taken before anything is
   stored: a 429 leaves no trace, and the client retries the same message after Retry-After. A
   message that is then not stored (409, 503) gives its place back: only accepted ones count.
   Then the user's daily token budget (``spending``) admits the turn, reserving its first call,
   or refuses it (429 ``DAILY_BUDGET_EXCEEDED`` until local midnight; the rate-limit place is
   given back). Every attempt's tokens are settled to the user's day after the call; a turn
   handed over keeps its reservation for the worker, which settles to the same day.
3. The user's message is stored BEFORE the model is called (it reserves the next seq for the
   answer, so a turn's two messages are adjacent even when two turns overlap).
4. PromptBuilder + HistoryAssembler (window, token budget) + the new message -> the model
   (AIConversationService: temperature 0.3, max_tokens 1200, one retry after 1.5 s, deadline).
5. The answer is read: refusal / content_filter / empty get their fixed texts; otherwise the
   LLMOutputParser extracts the JSON, and the content the client sees ends with the canonical
   fence, or carries no JSON at all when the JSON was invalid (the class is logged).
   ``finish_reason=length`` is an answer like any other, marked ``truncated``: its unclosed
   fence fails as JsonParseError and is stripped, so no broken fence reaches the client.
6. The assistant message (the fallback answer included), the validated draft and the audit record are
   written in ONE transaction AFTER the call.

At a real model's pace (``chat.pending``): step 4 runs in the request only when the whole answer
fits in the request's time at the model's learned pace and the client did not ask to be answered
later (``Prefer: respond-async``); otherwise, and when a synchronous answer turns out slower than
planned and the deadline cuts it, the turn is marked pending and handed to the worker, and the
client gets ``TurnAccepted``. A queue that does not take the turn stores the fallback answer at once:
nothing is lost and the client is told the truth. The worker (``answer_pending``) builds the same
prompt from the history before the message and stores the answer through the same transaction,
exactly once; an answer its own deadline cuts is stored as a truncated answer.
"""

from __future__ import annotations

import math
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from ..answered_later import CutShort, answer_later, now_or_later
from ..clock import utc_now
from ..errors import DomainError
from ..japanese import is_japanese_prose
from ..live import LiveChannel, NoLiveChannel, done_frame
from ..llm.accounting import ModelAccount, nothing_spent
from ..llm.policy import Deadline
from ..llm.types import Usage, estimate_tokens
from ..observability import logger
from ..spending import Admission, DailyBudget, DailyBudgetExceeded, reservation_estimate
from .answers import FALLBACK_CONTENT, FILTERED_CONTENT, REFUSAL_CONTENT, AIConversationErrorCode
from .audit import AuditHasher, TurnAudit
from .conversation import AIConversationService, ConversationUnavailable, ModelAnswer
from .history import ChatMessage, HistoryAssembler, HistoryOptions, TokenBudget, history_budget
from .output_parser import LLMOutputParser, TemplateDraftParseResult, compose_content
from .pending import AnswerQueue, MessageNotFound, PendingTurn, TurnAccepted
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
        """Store the answer, its draft and its audit record atomically, and end its user message's
        wait (``StoredTurn.pending``); ``AnswerExists`` when the answer's seq is already taken
        (another delivery of the same pending turn answered it), ``SessionGone`` when the session
        is gone or being deleted."""
        ...

    def mark_answer_pending(self, session_id: str, user_seq: int, since: str) -> None:
        """Note on the user's message that its answer is the worker's, until the answer is stored."""
        ...

    def turn(self, session_id: str, user_seq: int) -> StoredTurn:
        """The user's message of that seq, its answer and the answer's audit record, read consistently."""
        ...


@dataclass(frozen=True)
class StoredTurn:
    message: StoredMessage | None
    answer: StoredMessage | None
    pending: bool = False
    audit: dict[str, Any] | None = None


class AnswerExists(Exception):
    """The answer's seq is taken: the turn was answered already (at-least-once delivery)."""


class SessionGone(Exception):
    """The session is gone, or its deletion began, before the answer was stored: the answer has
    nowhere to go. For the worker a normal end of a turn (the user deleted the chat meanwhile)."""


class RateLimiter(Protocol):
    def acquire(self, user_id: str) -> float | None:
        """None when the call may go ahead (its place is taken), else the seconds until it may."""
        ...

    def release(self, user_id: str) -> None:
        """Give back the place the last ``acquire`` took: the message was not accepted."""
        ...


class RateLimitExceeded(DomainError):
    """The caller sent more messages than the window allows: 429 with the wait in Retry-After."""

    status = 429
    code = "RATE_LIMITED"

    def __init__(self, retry_after_s: float) -> None:
        # The header and the message say the same whole seconds, rounded up: neither asks too early.
        wait = max(1, math.ceil(retry_after_s))
        super().__init__(f"too many messages; retry in {wait} s", retry_after_s=wait)
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class ChatSettings:
    history_window: int = 12
    budget: TokenBudget = field(default_factory=lambda: TokenBudget(model_context_limit=128_000))
    ttl_days: int = 90
    conversation_limit: int = CONVERSATION_LIMIT


@dataclass(frozen=True)
class ProcessMessageInput:
    """One user message to answer (``history_window`` None: the setting's)."""

    session_id: str
    user_id: str
    message: str
    history_window: int | None = None
    idempotency_key: str | None = None
    time_zone: str | None = None  # the caller's zoneinfo claim: the day the tokens count to


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
    account: ModelAccount | None = None  # None only for an answer no model call was made for

    @property
    def cost_usd(self) -> float | None:
        return self.account.cost_usd if self.account is not None and self.usage.total_tokens else None


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
    answers: AnswerQueue | None = None  # None: every turn is answered in the request
    history: HistoryAssembler = field(default_factory=HistoryAssembler)
    parser: LLMOutputParser = field(default_factory=LLMOutputParser)
    clock: Callable[[], datetime] = utc_now
    new_id: Callable[[], str] = lambda: uuid.uuid4().hex
    budget: DailyBudget = field(default_factory=lambda: DailyBudget(None, 0))  # off unless given
    live: LiveChannel = field(default_factory=NoLiveChannel)  # the user's open WebSocket connections

    def start_session(self, user_id: str, context: SessionContext) -> SessionRecord:
        now = self.clock()
        session = SessionRecord(self.new_id(), user_id, context, iso(now), template_seed=secrets.token_hex(16))
        self.store.create_session(session, self._expires_at(now))
        return session

    def execute(
        self, request: ProcessMessageInput, deadline: Deadline | None = None, *, prefer_later: bool = False
    ) -> ProcessMessageResult | TurnAccepted:
        """One turn: answered now, or accepted for the worker (see the module docstring)."""
        session = self.store.get_session(request.session_id)
        if session is None or session.user_id != request.user_id:
            raise SessionNotFound(request.session_id)
        plan = self.conversation.plan(deadline)
        later = self.answers is not None and answer_later(prefer_later=prefer_later, fits=plan.max_tokens is not None)
        wait = self.rate_limiter.acquire(request.user_id)
        if wait is not None:
            raise RateLimitExceeded(wait)
        try:
            admission = self.budget.admit(request.user_id, request.time_zone, self._reservation(session, request))
        except DailyBudgetExceeded:
            self.rate_limiter.release(request.user_id)  # refused: nothing of it counts or is stored
            raise
        now = self.clock()
        try:
            user_seq = self.store.append_user_message(
                session, request.message, iso(now), self._expires_at(now), idempotency_key=request.idempotency_key
            )
        except Exception:
            # Not accepted (a concurrent change: 409, storage busy: 503): it must not count.
            self.rate_limiter.release(request.user_id)
            self.budget.settle(admission, 0)
            raise

        def answer_now() -> ProcessMessageResult:
            recent = self.store.recent_messages(session.session_id, self.settings.conversation_limit)
            messages = self._messages(session, request, [m for m in recent if m.seq < user_seq])
            # Slower than planned, the answer is cut (CutShort): the worker has the time to answer it whole.
            try:
                reply = self._ask(messages, deadline, request.user_id, keep_partial=self.answers is None)
            except CutShort as cut:
                # The cut calls were billed; the reservation stays for the worker's call.
                self.budget.settle(admission, cut.spent_tokens, reservation_done=False)
                raise
            self.budget.settle(admission, reply.usage.total_tokens)
            return self._finish(session, request, user_seq, reply, recent, len(messages) - 2)

        return now_or_later(
            answer_now, lambda: self._hand_over(session, request, user_seq, plan.seconds, admission), later=later
        )

    def _reservation(self, session: SessionRecord, request: ProcessMessageInput) -> int:
        """The first call's cost as admission reserves it: the system prompt and the message (the
        history is read only once the message is stored) and the most the answer may write."""
        system = self.prompt_builder.build_system_prompt(session.context)
        prompt = estimate_tokens(system) + estimate_tokens(request.message)
        return reservation_estimate(prompt, self.conversation.policy.max_tokens)

    def answer_pending(self, turn: PendingTurn, deadline: Deadline | None) -> ProcessMessageResult | None:
        """The worker's part: answer a pending turn, once. None when there is nothing to answer
        (``_waiting``), or when the session was deleted while the model answered."""
        waiting = self._waiting(turn)
        if waiting is None:
            return None
        session, message = waiting
        request = ProcessMessageInput(turn.session_id, turn.user_id, message.content)
        recent = self.store.recent_messages(session.session_id, self.settings.conversation_limit)
        messages = self._messages(session, request, [m for m in recent if m.seq < turn.user_seq])
        reply = self._ask(messages, deadline, turn.user_id, keep_partial=True)
        admission = self.budget.accepted(turn.user_id, turn.spending_day, turn.reserved_tokens)
        # Accepted turns are finished, never refused; their tokens count to the day of the request.
        # Only the delivery that stores the answer gives the reservation back: another delivery's
        # call was billed too, but the reservation is given back once.
        try:
            result = self._settle(session, request, turn.user_seq, reply, recent, len(messages) - 2)
        except Exception:
            self.budget.settle(admission, reply.usage.total_tokens, reservation_done=False)
            raise
        self.budget.settle(admission, reply.usage.total_tokens, reservation_done=result is not None)
        return result

    def store_fallback(self, turn: PendingTurn, error_type: str) -> ProcessMessageResult | None:
        """The fallback answer for a pending turn the worker could not answer (its last delivery): no turn
        stays pending for ever."""
        waiting = self._waiting(turn)
        if waiting is None:
            return None
        session, message = waiting
        request = ProcessMessageInput(turn.session_id, turn.user_id, message.content)
        reply = _fallback(
            error_type, AIConversationErrorCode.OPENAI_UNAVAILABLE, 0, 0, self.conversation.model.model_name
        )
        reply = replace(reply, account=nothing_spent(reply.model, self.prompt_builder.prompt_version))
        recent = self.store.recent_messages(session.session_id, self.settings.conversation_limit)
        result = self._settle(session, request, turn.user_seq, reply, recent, 0)
        if result is not None:  # the turn ends without a model answer: its reservation goes back
            self.budget.settle(self.budget.accepted(turn.user_id, turn.spending_day, turn.reserved_tokens), 0)
        return result

    def _waiting(self, turn: PendingTurn) -> tuple[SessionRecord, StoredMessage] | None:
        """The session and the user's message ``turn`` names while that message waits for the
        worker's answer; otherwise None, with the reason logged. A queue message is input like any
        other: one that names an answer, a message answered already or one never handed over must
        neither call the model nor write (an answer past the session's count would refuse every
        later message of the session)."""
        session = self.store.get_session(turn.session_id)
        if session is None or session.user_id != turn.user_id:
            reason = "no such session of this user (deleted meanwhile)"
        else:
            stored = self.store.turn(turn.session_id, turn.user_seq)
            if stored.message is None or stored.message.role != "user":
                reason = "no user's message of that seq"
            elif stored.answer is not None:
                reason = "answered already"
            elif not stored.pending:
                reason = "not handed to the worker"
            else:
                return session, stored.message
        logger.info(
            "chat turn needs no answer", extra={"session_id": turn.session_id, "seq": turn.user_seq, "reason": reason}
        )
        return None

    def _settle(
        self,
        session: SessionRecord,
        request: ProcessMessageInput,
        user_seq: int,
        reply: _Reply,
        recent: list[StoredMessage],
        history_messages: int,
    ) -> ProcessMessageResult | None:
        """The worker's write of the answer; None when there is nowhere to write it any more: another
        delivery answered the turn, or the user deleted the session meanwhile (a normal end, not a
        failure to deliver again)."""
        try:
            return self._finish(session, request, user_seq, reply, recent, history_messages)
        except AnswerExists:
            reason = "answered by another delivery"
        except SessionGone:
            reason = "session deleted while it was answered"
        logger.info(
            "chat turn needs no answer", extra={"session_id": session.session_id, "seq": user_seq, "reason": reason}
        )
        return None

    def read_answer(self, user_id: str, session_id: str, answer_seq: int) -> ProcessMessageResult | TurnAccepted:
        """The answer of seq ``answer_seq`` as the message route answers it, or the turn still pending."""
        session = self.store.get_session(session_id)
        if session is None or session.user_id != user_id:
            raise SessionNotFound(session_id)
        stored = self.store.turn(session_id, answer_seq - 1)
        answer = stored.answer
        if answer is None or answer.role != "assistant":
            if stored.message is not None and stored.message.role == "user" and stored.pending:
                return TurnAccepted(session_id, answer_seq - 1, 0.0)
            raise MessageNotFound(f"no answer {answer_seq} in session {session_id!r}")
        audit = stored.audit or {}
        account = ModelAccount.from_dict(audit["account"]) if isinstance(audit.get("account"), dict) else None
        usage = Usage(
            int(audit.get("promptTokens") or 0),
            int(audit.get("completionTokens") or 0),
            cached_prompt_tokens=0 if account is None else account.usage.cached_prompt_tokens,
        )
        recent = self.store.recent_messages(session_id, self.settings.conversation_limit)
        return ProcessMessageResult(
            assistant=answer,
            conversation=recent,
            usage=usage,
            cost_usd=audit.get("costUsd"),
            error_code=audit.get("errorCode"),
            truncated=audit.get("finishReason") == "length",
            account=account,
        )

    def _hand_over(
        self,
        session: SessionRecord,
        request: ProcessMessageInput,
        user_seq: int,
        expected_s: float,
        admission: Admission,
    ) -> ProcessMessageResult | TurnAccepted:
        assert self.answers is not None
        now = iso(self.clock())
        turn = PendingTurn(
            session_id=session.session_id,
            user_id=request.user_id,
            user_seq=user_seq,
            spending_day=admission.day if self.budget.on else None,
            reserved_tokens=admission.reserved,
        )
        try:
            self.store.mark_answer_pending(session.session_id, user_seq, now)
            self.answers.send(turn)
        except Exception as error:
            # Not handed over: the turn is answered now with the fallback answer, so it is not left waiting.
            logger.warning("chat turn not handed to the worker", extra={"error_type": type(error).__name__})
            recent = self.store.recent_messages(session.session_id, self.settings.conversation_limit)
            reply = _fallback("queue_unavailable", AIConversationErrorCode.OPENAI_UNAVAILABLE, 0, 0, "")
            reply = replace(reply, account=nothing_spent("", self.prompt_builder.prompt_version))
            self.budget.settle(admission, 0)
            return self._finish(session, request, user_seq, reply, recent, 0)
        logger.info("chat turn handed to the worker", extra={"session_id": session.session_id, "seq": user_seq})
        return TurnAccepted(session.session_id, user_seq, expected_s)

    def _finish(
        self,
        session: SessionRecord,
        request: ProcessMessageInput,
        user_seq: int,
        reply: _Reply,
        recent: list[StoredMessage],
        history_messages: int,
    ) -> ProcessMessageResult:
        assistant = self._store_answer(session, request, user_seq, reply, history_messages=history_messages)
        conversation = sorted([*(m for m in recent if m.seq != assistant.seq), assistant], key=lambda m: m.seq)
        result = ProcessMessageResult(
            assistant=assistant,
            conversation=conversation[-self.settings.conversation_limit :],
            usage=reply.usage,
            cost_usd=reply.cost_usd,
            error_code=reply.error_code,
            truncated=reply.finish_reason == "length",
            account=reply.account,
        )
        # Stored: the user's open connections get it, whichever function wrote it and however it was asked.
        self.live.send(request.user_id, done_frame(session.session_id, assistant.seq, result.as_response()))
        return result

    def _ask(
        self, messages: list[ChatMessage], deadline: Deadline | None, user_id: str, *, keep_partial: bool
    ) -> _Reply:
        """The model's answer read, or the fallback answer. An answer the deadline cut is kept as a truncated
        answer (``keep_partial``: nothing better can come), or handed over (``CutShort``). Either way the
        call's record comes with it (``ModelAccount``), and its log line is written."""
        try:
            answer = self.conversation.process_message(
                messages,
                deadline,
                keep_partial=keep_partial,
                prompt_version=self.prompt_builder.prompt_version,
                user_id=user_id,
            )
            return self._read(answer)
        except ConversationUnavailable as failure:
            if failure.error_type == "deadline" and not keep_partial:
                raise CutShort(failure.usage.total_tokens) from failure
            if failure.partial is not None:
                return self._read(failure.partial)
            reply = _fallback(
                failure.error_type,
                failure.error_code,
                failure.retry_count,
                failure.duration_ms,
                failure.model,
                failure.usage,
            )
            return replace(reply, account=failure.account)

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
            account=answer.account,
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
            account=None if reply.account is None else reply.account.as_dict(),
            exchange_hash=self.hasher.hash_messages([("user", user_message), ("assistant", assistant.content)]),
            history_messages=max(0, history_messages),
            answer_in_japanese=is_japanese_prose(_prose(assistant.content)) if answered else None,
        )

    def _expires_at(self, moment: datetime) -> int:
        return int((moment + timedelta(days=self.settings.ttl_days)).timestamp())


def _fallback(
    error_type: str,
    error_code: AIConversationErrorCode,
    retry_count: int,
    duration_ms: int,
    model: str,
    usage: Usage | None = None,
) -> _Reply:
    """The fallback answer: the fixed text, the tokens the failed attempts were billed for (none
    when no attempt reached the model), the error that caused it
    (docs/chat-and-templates.md#the-fallback-answer)."""
    return _Reply(
        MessageKind.FALLBACK,
        FALLBACK_CONTENT,
        usage or Usage(),
        retry_count,
        duration_ms,
        model,
        error_type=error_type,
        error_code=error_code.value,
    )


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
