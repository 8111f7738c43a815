"""AIConversationService (docs/chat-and-templates.md#the-model-call-policy): one chat answer from the model.

The answer is free text (Japanese prose ending in a ```json fence), so it is one logical call
through ``llm.calls.complete_with_retries``: temperature 0.3, max_tokens 1200, and the chat's retry
policy, at most one retry, 1.5 s later, only after a timeout, 429, 5xx or network error. A
Retry-After longer than that is honoured up to ``max_retry_after_s`` (5 s: a person is waiting),
and no wait or request may pass the invocation's deadline. The openai client's own retries are
off (``llm/openai_model.py``), so the two never multiply.

Whatever stops the call (the retry spent, the deadline, a rejected request, an adapter bug)
becomes ``ConversationUnavailable`` with its error code, the retry count, the duration and the
tokens every attempt was billed for (a stream cut after 500 tokens is billed them): the caller
stores the fallback answer instead of losing the turn, with what it cost. An answer the deadline cut while it
arrived comes with it (``partial``), for a caller that can still use it.

``pace`` is the model's learned pace: the chat answers in the request when a whole answer
(``max_tokens``) fits in the time left at it, and hands the turn to its worker when not.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypedDict, Unpack

from ..llm.accounting import ModelAccount, accounted, nothing_spent
from ..llm.calls import complete_with_retries
from ..llm.errors import DeadlineReached, ProviderFailed
from ..llm.policy import TRANSIENT_KINDS, Deadline, RetryPolicy
from ..llm.retry_loop import CallOptions
from ..llm.speeds import CONTAINER_SPEEDS, ModelSpeeds, SpeedEstimate, speed_prior
from ..llm.types import AnswerHints, AnswerListener, Attempt, ChatModel, ChatRequest, ChatResponse, Pacing, Usage
from ..observability import logger
from .answers import AIConversationErrorCode, error_code_for
from .history import ChatMessage

PURPOSE = "chat.reply"


@dataclass(frozen=True)
class ConversationPolicy:
    """Temperature 0.3, maxTokens 1200, one retry after 1.5 s."""

    temperature: float = 0.3
    max_tokens: int = 1200
    retry_backoff_s: float = 1.5
    max_retry_after_s: float = 5.0
    language: str = "ja"

    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(
            max_attempts=2,
            backoff_base_s=self.retry_backoff_s,
            backoff_factor=1.0,
            max_backoff_s=self.retry_backoff_s,
            retry_on=TRANSIENT_KINDS,
            immediate=frozenset(),
            max_retry_after_s=self.max_retry_after_s,
        )


@dataclass(frozen=True)
class ModelAnswer:
    """The model's answer: the text (or refusal), finish_reason and the API's usage, and its
    record (``llm.accounting``: model, prompt version, tokens and cost of every attempt)."""

    response: ChatResponse
    usage: Usage
    retry_count: int
    duration_ms: int
    model: str
    account: ModelAccount | None = None


@dataclass
class ConversationUnavailable(Exception):
    """No answer: store the fallback answer. ``error_type`` is the engine's kind (``rate_limit``,
    ``timeout``, ``server_error``, ``connection``, ``deadline``, ...); ``usage`` what every attempt
    was billed for, ``account`` its record; ``partial`` what arrived before the deadline cut it."""

    error_code: AIConversationErrorCode
    error_type: str
    retry_count: int
    duration_ms: int
    model: str
    partial: ModelAnswer | None = None
    usage: Usage = field(default_factory=Usage)
    account: ModelAccount | None = None

    def __str__(self) -> str:
        return f"{self.error_code.value} ({self.error_type}) after {self.retry_count} retry(ies)"


class Billed(TypedDict, total=False):
    usage: Usage  # what every attempt was billed for
    account: ModelAccount  # the call's record


class AIConversationService:
    def __init__(
        self,
        model: ChatModel,
        policy: ConversationPolicy | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        timer: Callable[[], float] = time.perf_counter,
        speeds: ModelSpeeds = CONTAINER_SPEEDS,
    ) -> None:
        self.model = model
        self.policy = policy or ConversationPolicy()
        self.sleep = sleep
        self.timer = timer
        self.speeds = speeds

    def pace(self) -> SpeedEstimate:
        """The model's pace as this container learned it (or its prior): how long an answer takes."""
        return self.speeds.estimate(self.model.model_name, speed_prior(self.model))

    def process_message(
        self,
        messages: Sequence[ChatMessage],
        deadline: Deadline | None,
        *,
        keep_partial: bool = False,
        prompt_version: str = "",
        user_id: str | None = None,
        listener: AnswerListener | None = None,
    ) -> ModelAnswer:
        """The model's answer. ``keep_partial``: the caller keeps what arrived when the deadline
        cuts it, so the answer runs until then; otherwise one whose pace shows it will not be done
        in time is cut at once (``Pacing.cut_when_late``) and the caller hands the turn over
        seconds after it began, not at the deadline. Whatever the outcome, the call is accounted
        for (``llm.accounting.accounted``, one log line with ``user_id``): the answer and the
        error carry the record, a cut call handed to the worker included. ``listener`` hears the
        answer as it is written (``llm.types.AnswerListener``)."""
        request = ChatRequest(
            messages=[dict(message) for message in messages],
            max_tokens=self.policy.max_tokens,
            temperature=self.policy.temperature,
            purpose=PURPOSE,
            hints=AnswerHints(language=self.policy.language),
            pacing=Pacing(cut_when_late=not keep_partial),
            listener=listener,
        )
        started = self.timer()
        try:
            options = CallOptions(self.policy.retry_policy(), sleep=self.sleep)
            result = complete_with_retries(self.model, request, options, deadline=deadline)
        except (ProviderFailed, DeadlineReached) as error:
            account = self._accounted(error.attempts, prompt_version, user_id, error.kind)
            partial = None
            if isinstance(error, DeadlineReached) and error.partial is not None and error.partial.content:
                # Used like a truncated answer where that helps: what arrived, its tokens billed.
                cut = replace(error.partial, finish_reason="length")
                partial = ModelAnswer(
                    cut, error.usage, max(0, len(error.attempts) - 1), self._ms(started), self._name(cut), account
                )
            raise self._unavailable(
                error.kind, len(error.attempts), started, partial, usage=error.usage, account=account
            ) from error
        except Exception as error:
            # An adapter bug or an unreadable provider answer must not lose the turn either.
            logger.exception("chat model call failed unexpectedly", extra={"error_type": type(error).__name__})
            raise self._unavailable(
                type(error).__name__, 1, started, account=nothing_spent(self.model.model_name, prompt_version)
            ) from error
        return ModelAnswer(
            response=result.response,
            usage=result.usage,
            retry_count=result.retries,
            duration_ms=self._ms(started),
            model=self._name(result.response),
            account=self._accounted(result.attempts, prompt_version, user_id, "answered"),
        )

    def _accounted(self, attempts: list[Attempt], version: str, user_id: str | None, outcome: str) -> ModelAccount:
        return accounted(
            attempts,
            model=self.model.model_name,
            prompt_version=version,
            purpose=PURPOSE,
            user_id=user_id,
            outcome=outcome,
        )

    def _name(self, response: ChatResponse) -> str:
        return response.model or self.model.model_name

    def _unavailable(
        self, kind: str, attempts: int, started: float, partial: ModelAnswer | None = None, **billed: Unpack[Billed]
    ) -> ConversationUnavailable:
        """The failure of a call of ``attempts`` attempts; ``billed``: its ``usage`` and ``account``."""
        retries = max(0, attempts - 1)
        model = self.model.model_name
        return ConversationUnavailable(error_code_for(kind), kind, retries, self._ms(started), model, partial, **billed)

    def _ms(self, started: float) -> int:
        return max(0, int((self.timer() - started) * 1000))
