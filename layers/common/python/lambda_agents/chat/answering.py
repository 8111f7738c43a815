"""Where a chat answer is produced (docs/chat-and-templates.md#one-chat-turn), in the request and in
the worker alike (``use_case`` and ``worker`` call it):

1. PromptBuilder + HistoryAssembler (window, token budget) over the messages before the user's
   message, then the message -> the model (AIConversationService: temperature 0.3, max_tokens
   1200, one retry after 1.5 s, deadline).
2. The answer is read (``replies.read_reply``): refusal / content_filter / empty get their fixed
   texts; otherwise the LLMOutputParser extracts the JSON, and the content the client sees ends
   with the canonical fence, or carries no JSON at all when the JSON was invalid (the class is
   logged). ``finish_reason=length`` is an answer like any other, marked ``truncated``: its
   unclosed fence fails as JsonParseError and is stripped, so no broken fence reaches the client.
   A provider that keeps failing gives the fallback answer. An answer the deadline cuts is kept as
   a truncated answer when nothing better can come (``keep_partial``), else the turn is cut short
   (``answered_later.CutShort``) for the worker to answer whole.
3. The assistant message (the fallback answer included), the validated draft and the audit record
   are written in ONE transaction AFTER the call, conditional on the answer's seq; once written,
   the answer is pushed to the user's open connections (``live``), from the request or the worker.
   Its prose goes to them while the model writes it (``streamed_prose``); once stored, the rest of
   the text follows, so the words applied by offset equal the stored text, then its ``done``. An
   answer the model did not write (the fallback answer, a refusal's or a filtered answer's fixed
   text) comes as its ``done`` only, never as invented words.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from ..answered_later import CutShort
from ..clock import utc_now
from ..japanese import is_japanese_prose
from ..live import LiveAnswer, LiveChannel, NoLiveChannel
from ..llm.accounting import ModelAccount, nothing_spent
from ..llm.policy import Deadline
from ..llm.types import estimate_tokens
from ..observability import logger
from ..spending import Spent, reservation_estimate
from .answers import AIConversationErrorCode
from .audit import AuditHasher, TurnAudit
from .conversation import AIConversationService, ConversationUnavailable
from .history import ChatMessage, HistoryAssembler, HistoryOptions, TokenBudget, history_budget
from .output_parser import LLMOutputParser
from .prompt import PromptBuilder
from .records import DraftRecord, MessageKind, SessionRecord, StoredMessage
from .replies import ProcessMessageResult, Reply, draft_status, fallback_reply, prose, read_reply
from .store import ChatStore
from .streamed_prose import StreamedProse

CONVERSATION_LIMIT = 50


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
    idempotency_key: str | None = None  # the REST Idempotency-Key it was sent with
    client_message_id: str | None = None  # the socket's clientMessageId it was sent with


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


@dataclass
class ChatAnswering:
    store: ChatStore
    conversation: AIConversationService
    hasher: AuditHasher
    settings: ChatSettings = field(default_factory=ChatSettings)
    prompt_builder: PromptBuilder = field(default_factory=PromptBuilder)
    history: HistoryAssembler = field(default_factory=HistoryAssembler)
    parser: LLMOutputParser = field(default_factory=LLMOutputParser)
    clock: Callable[[], datetime] = utc_now
    live: LiveChannel = field(default_factory=NoLiveChannel)  # the user's open WebSocket connections
    live_clock: Callable[[], float] = time.monotonic  # seconds: how often words go out (``live.DeltaCoalescer``)

    def answer(
        self,
        session: SessionRecord,
        request: ProcessMessageInput,
        user_seq: int,
        deadline: Deadline | None,
        *,
        keep_partial: bool,
        spent: Spent,
        spent_before: ModelAccount | None = None,
    ) -> ProcessMessageResult:
        """The answer to the user's message ``user_seq``, asked and stored (steps 1-3); what its calls
        were billed for goes into ``spent`` as soon as it is known. ``spent_before``: what the request
        that handed the turn over spent on it (counted already), added to the stored answer's usage."""
        recent = self.store.recent_messages(session.session_id, self.settings.conversation_limit)
        messages = self._messages(session, request, [m for m in recent if m.seq < user_seq])
        live = self._live_answer(session, request, user_seq)
        reply = self._ask(messages, deadline, request.user_id, keep_partial=keep_partial, live=live)
        spent.tokens = reply.usage.total_tokens
        if spent_before is not None:
            reply = reply.after(spent_before)
        return self.store_reply(session, request, user_seq, reply, recent, len(messages) - 2, live)

    def fallback(
        self, session: SessionRecord, request: ProcessMessageInput, user_seq: int, error_type: str, model: str
    ) -> ProcessMessageResult:
        """The fallback answer stored for a turn no model answered (a hand-off the queue refused, a
        worker that gave up): no turn stays waiting for ever."""
        account = nothing_spent(model, self.prompt_builder.prompt_version)
        reply = fallback_reply(error_type, AIConversationErrorCode.OPENAI_UNAVAILABLE, 0, 0, model, account=account)
        recent = self.store.recent_messages(session.session_id, self.settings.conversation_limit)
        return self.store_reply(session, request, user_seq, reply, recent, 0)

    def reservation(self, session: SessionRecord, request: ProcessMessageInput) -> int:
        """The first call's cost as admission reserves it: the system prompt and the message (the
        history is read only once the message is stored) and the most the answer may write."""
        system = self.prompt_builder.build_system_prompt(session.context)
        prompt = estimate_tokens(system) + estimate_tokens(request.message)
        return reservation_estimate(prompt, self.conversation.policy.max_tokens)

    def store_reply(
        self,
        session: SessionRecord,
        request: ProcessMessageInput,
        user_seq: int,
        reply: Reply,
        recent: list[StoredMessage],
        history_messages: int,
        live: LiveAnswer | None = None,
    ) -> ProcessMessageResult:
        """The answer, its validated draft (if any) and its audit record, in one write (step 3);
        then pushed to the user's connections (``live``: the answer whose words went out)."""
        answered = self.clock()
        assistant = StoredMessage(
            seq=user_seq + 1,
            role="assistant",
            content=reply.content,
            created_at=iso(answered),
            kind=reply.kind,
            reply_to=user_seq,
            template_draft=draft_status(reply.draft),
        )
        data = None if reply.draft is None else reply.draft.data
        draft = None
        if data is not None and data.process_template_draft is not None:
            draft = DraftRecord(session.session_id, assistant.seq, data.as_json(), assistant.created_at)
        audit = self._audit(session, assistant, reply, request.message, history_messages)
        self.store.append_assistant_turn(session.session_id, assistant, draft, audit, self.expires_at(answered))
        logger.info("chat turn", extra=audit.as_dict())
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
        live = live or self._live_answer(session, request, user_seq)
        if reply.kind is MessageKind.ANSWER:
            live.settle(assistant.content)
        live.done(result.as_response())
        return result

    def _live_answer(self, session: SessionRecord, request: ProcessMessageInput, user_seq: int) -> LiveAnswer:
        return LiveAnswer(self.live, request.user_id, session.session_id, user_seq + 1, self.live_clock)

    def expires_at(self, moment: datetime) -> int:
        return int((moment + timedelta(days=self.settings.ttl_days)).timestamp())

    def _ask(
        self,
        messages: list[ChatMessage],
        deadline: Deadline | None,
        user_id: str,
        *,
        keep_partial: bool,
        live: LiveAnswer,
    ) -> Reply:
        """The model's answer read, or the fallback answer, with the call's record (``ModelAccount``);
        its prose goes to ``live`` as it is written."""
        try:
            answer = self.conversation.process_message(
                messages,
                deadline,
                keep_partial=keep_partial,
                prompt_version=self.prompt_builder.prompt_version,
                user_id=user_id,
                listener=StreamedProse(live),
            )
            return read_reply(answer, self.parser)
        except ConversationUnavailable as failure:
            if failure.error_type == "deadline" and not keep_partial:
                raise CutShort(failure.usage.total_tokens, failure.account) from failure
            if failure.partial is not None:
                return read_reply(failure.partial, self.parser)
            return fallback_reply(
                failure.error_type,
                failure.error_code,
                failure.retry_count,
                failure.duration_ms,
                failure.model,
                failure.usage,
                failure.account,
            )

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

    def _audit(
        self, session: SessionRecord, assistant: StoredMessage, reply: Reply, user_message: str, history_messages: int
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
            answer_in_japanese=is_japanese_prose(prose(assistant.content)) if answered else None,
        )
