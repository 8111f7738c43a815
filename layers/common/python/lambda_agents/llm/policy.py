"""Token, retry and deadline policies: the knobs the engine's callers set together.

The openai client's own retries are switched off (max_retries=0) and its timeout is set per
request from the deadline, so the engine is the one place that decides how often and how long.

A token policy gives the first budget and the ceiling; after ``finish_reason=length`` the next
budget comes from the truncated answer itself (``truncation.py``), whatever the policy would
have grown to, and a type's learned need (``budgets.py``) can start a call higher.

Which answers are retried is ``RetryPolicy.retry_on``. By default a ``content_filter`` stop is
retried once more, at once (the filter judged this sample of the output, a new sample usually
passes) and a refusal is not (the model declined the request; asking again rarely changes it and
costs a call). Functions that decide otherwise say so where they build their policy.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

# Kept free of a request's timeout: a request cut by its timeout must still leave the engine time
# to raise DeadlineReached before the deadline, not after it.
DEADLINE_SLACK_S = 0.25
TRANSIENT_KINDS = frozenset({"rate_limit", "server_error", "timeout", "connection"})
ANSWER_KINDS = frozenset({"length", "validation", "invalid_json", "content_filter"})
DEFAULT_RETRY_ON = ANSWER_KINDS | TRANSIENT_KINDS


class TokenPolicy(Protocol):
    """max_tokens for the attempt after ``attempt`` failed answers (0: the first attempt); the
    engine never exceeds ``ceiling``. A provider failure (a timeout, a 429, a 5xx) is not a
    failed answer: the next attempt asks for the same budget, since nothing showed it was short."""

    @property
    def ceiling(self) -> int: ...

    def max_tokens(self, attempt: int) -> int: ...


@dataclass(frozen=True)
class GrowingTokenPolicy:
    """``initial * growth ** attempt``, capped at ``ceiling``: the budget of attempts after a
    failure other than truncation (a truncated answer's retry asks for its own estimate)."""

    initial: int = 1024
    growth: float = 1.5
    ceiling: int = 16_384

    def max_tokens(self, attempt: int) -> int:
        return min(self.ceiling, math.ceil(self.initial * self.growth**attempt))


@dataclass(frozen=True)
class FixedTokenPolicy:
    """The same budget every time; a truncated answer is not retried (the ceiling is the budget,
    so the retry would truncate again), and no learned need raises it."""

    value: int = 1024

    @property
    def ceiling(self) -> int:
        return self.value

    def max_tokens(self, attempt: int) -> int:
        return self.value


@dataclass(frozen=True)
class RetryPolicy:
    """How many attempts, after which failures, and how long to wait between them.

    Failures in ``immediate`` are retried at once: waiting does not help a truncated or
    invalid answer, it only costs the invocation's time. Others back off exponentially;
    a Retry-After longer than the backoff is honoured if the deadline allows it.
    """

    max_attempts: int = 3
    backoff_base_s: float = 1.0
    backoff_factor: float = 2.0
    max_backoff_s: float = 20.0
    retry_on: frozenset[str] = DEFAULT_RETRY_ON
    immediate: frozenset[str] = ANSWER_KINDS | {"refusal"}
    max_retry_after_s: float = 30.0

    def delay_s(self, kind: str, retry_number: int, retry_after_s: float | None = None) -> float:
        """Wait before retry ``retry_number`` (1-based) after a failure of ``kind``."""
        if kind in self.immediate:
            return 0.0
        backoff = min(self.max_backoff_s, self.backoff_base_s * self.backoff_factor ** (retry_number - 1))
        if retry_after_s is not None:
            return max(backoff, min(retry_after_s, self.max_retry_after_s))
        return backoff


@dataclass(frozen=True)
class StreamTimeouts:
    """How long a model call may wait, part by part: to connect, for the first token, and between
    two chunks of a streamed answer. A whole answer is bounded by the caller's deadline only: a
    4,000-token answer at 60 tokens/s takes a minute, which no fixed request timeout fits.
    ``unbounded_answer_s`` bounds a non-streamed answer when the caller sets no deadline.

    A model known to think before it writes (a reasoning model: tens of seconds) is given
    ``FIRST_TOKEN_PATIENCE`` times its expected first token when that is longer, so one setting (its
    pace) is enough and a 40 s thinker is not cut at 30 s as if the provider had gone silent."""

    connect_s: float = 5.0
    first_token_s: float = 30.0
    stall_s: float = 15.0
    unbounded_answer_s: float = 600.0

    def for_first_token(self, expected_s: float | None) -> StreamTimeouts:
        """These timeouts for a model whose first token is expected after ``expected_s``."""
        if expected_s is None or FIRST_TOKEN_PATIENCE * expected_s <= self.first_token_s:
            return self
        return replace(self, first_token_s=FIRST_TOKEN_PATIENCE * expected_s)


FIRST_TOKEN_PATIENCE = 3.0


@dataclass
class Deadline:
    """The point in time by which the engine must have returned or raised.

    ``margin_s`` is kept free for the caller to store results and answer after the engine
    gives up: a Lambda killed by its timeout loses everything it had not written.
    """

    expires_at: float
    clock: Callable[[], float] = field(default=time.monotonic)

    @classmethod
    def after(cls, seconds: float, clock: Callable[[], float] = time.monotonic) -> Deadline:
        return cls(clock() + seconds, clock)

    @classmethod
    def from_lambda_context(cls, context: Any, margin_s: float = 3.0) -> Deadline | None:
        """None when there is no context (a plain local call): no deadline then."""
        get_remaining = getattr(context, "get_remaining_time_in_millis", None)
        if get_remaining is None:
            return None
        return cls.after(max(0.0, get_remaining() / 1000.0 - margin_s))

    def remaining_s(self) -> float:
        return max(0.0, self.expires_at - self.clock())
