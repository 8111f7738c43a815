"""Token, retry and deadline policies: the knobs the engine's callers set together.

The openai client's own retries are switched off (max_retries=0) and its timeout is set per
request from the deadline, so the engine is the one place that decides how often and how long.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

TRANSIENT_KINDS = frozenset({"rate_limit", "server_error", "timeout", "connection"})
DEFAULT_RETRY_ON = frozenset({"length", "validation", "invalid_json"}) | TRANSIENT_KINDS


class TokenPolicy(Protocol):
    """max_tokens for an attempt (0-based); the engine never exceeds ``ceiling``."""

    @property
    def ceiling(self) -> int: ...

    def max_tokens(self, attempt: int) -> int: ...


@dataclass(frozen=True)
class GrowingTokenPolicy:
    """``initial * growth ** attempt``, capped at ``ceiling``."""

    initial: int = 1024
    growth: float = 1.5
    ceiling: int = 16_384

    def max_tokens(self, attempt: int) -> int:
        return min(self.ceiling, math.ceil(self.initial * self.growth**attempt))


@dataclass(frozen=True)
class FixedTokenPolicy:
    """The same budget every time; a truncated answer is not retried (it would truncate again)."""

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
    immediate: frozenset[str] = frozenset({"length", "validation", "invalid_json"})
    max_retry_after_s: float = 30.0

    def delay_s(self, kind: str, retry_number: int, retry_after_s: float | None = None) -> float:
        """Wait before retry ``retry_number`` (1-based) after a failure of ``kind``."""
        if kind in self.immediate:
            return 0.0
        backoff = min(self.max_backoff_s, self.backoff_base_s * self.backoff_factor ** (retry_number - 1))
        if retry_after_s is not None:
            return max(backoff, min(retry_after_s, self.max_retry_after_s))
        return backoff


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
