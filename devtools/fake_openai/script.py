"""What the fake server is told to do: scripted steps, the model's speed, the account's limits.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Reply:
    """One answer. ``needs_tokens``: what the whole answer costs; below it, the request's limit
    truncates the answer (the first limit/needed share of its text, ``finish_reason=length``, billed
    the limit). ``completion_tokens`` overrides billing.

    Time: ``first_token_s`` and ``tokens_per_s`` override the server's profile for this answer.
    ``stall_after_tokens`` / ``stall_s``: the stream pauses that long after that many tokens, then
    goes on. ``drop_after_tokens``: the server closes the connection after that many tokens, with
    no finish and no ``[DONE]`` (a non-streamed request gets no answer at all)."""

    content: str | None = None
    finish_reason: str = "stop"
    refusal: str | None = None
    tool_arguments: str | None = None
    tool_name: str = "StructuredOutput"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    needs_tokens: int | None = None
    reasoning_tokens: int = 0  # part of completion_tokens a reasoning model spent thinking
    first_token_s: float | None = None
    tokens_per_s: float | None = None
    stall_after_tokens: int | None = None
    stall_s: float = 0.0
    drop_after_tokens: int | None = None


@dataclass(frozen=True)
class Fault:
    status: int = 500
    retry_after: float | None = None
    message: str = "fault injected by the fake server"


@dataclass(frozen=True)
class Slow:
    """A delay before anything is sent (headers included), then ``then``."""

    seconds: float
    then: Reply | Fault | None = None


Step = Reply | Fault | Slow


@dataclass(frozen=True)
class SpeedProfile:
    """How fast a model answers: the first token within ``first_token_s`` (low, high; uniform),
    then ``tokens_per_s`` (low, mode, high; triangular). An infinite rate answers at once."""

    name: str
    first_token_s: tuple[float, float]
    tokens_per_s: tuple[float, float, float]

    def draw(self, rng: random.Random) -> tuple[float, float]:
        """(seconds to the first token, tokens per second) for one answer."""
        low, high = self.first_token_s
        first = rng.uniform(low, high) if high > low else low
        slow, mode, fast = self.tokens_per_s
        rate = rng.triangular(slow, fast, mode) if fast > slow else mode
        return first, rate


INSTANT = SpeedProfile("instant", (0.0, 0.0), (float("inf"), float("inf"), float("inf")))
GPT_4O = SpeedProfile("gpt-4o", (0.2, 1.2), (35.0, 60.0, 80.0))
SLOW_HOUR = SpeedProfile("slow-hour", (0.5, 2.0), (15.0, 20.0, 25.0))
REASONING = SpeedProfile("reasoning", (10.0, 40.0), (40.0, 60.0, 80.0))
PROFILES = {profile.name: profile for profile in (INSTANT, GPT_4O, SLOW_HOUR, REASONING)}


@dataclass(frozen=True)
class RateLimit:
    """The account's limits, counted as OpenAI counts them: one request and prompt tokens plus the
    request's max tokens (``default_max_tokens`` when it sets none) on arrival, from buckets that
    refill continuously (a limit per minute refills by 1/60 of itself every second)."""

    requests_per_minute: int
    tokens_per_minute: int
    default_max_tokens: int = 4096


# The account a fake server has unless told otherwise: OpenAI's limits for gpt-4o at its highest
# usage tier, which no test comes near; its headers come with every answer, as OpenAI's do.
DEFAULT_ACCOUNT = RateLimit(requests_per_minute=10_000, tokens_per_minute=30_000_000)


class Buckets:
    """The two continuously refilled buckets of a ``RateLimit``, on the server's scaled clock."""

    def __init__(self, limit: RateLimit, time_scale: float, clock: Callable[[], float]) -> None:
        self.limit = limit
        self._scale = time_scale
        self._clock = clock
        self._lock = threading.Lock()
        self._requests = float(limit.requests_per_minute)
        self._tokens = float(limit.tokens_per_minute)
        self._at = self._now()

    def _now(self) -> float:
        return self._clock()

    def _refill(self) -> None:
        now = self._now()
        minutes = (now - self._at) / self._scale / 60.0
        self._at = now
        self._requests = min(self.limit.requests_per_minute, self._requests + minutes * self.limit.requests_per_minute)
        self._tokens = min(self.limit.tokens_per_minute, self._tokens + minutes * self.limit.tokens_per_minute)

    def take(self, tokens: int) -> RateDecision:
        """Take one request and ``tokens``, or say which limit refuses them and for how long."""
        with self._lock:
            self._refill()
            if tokens < 0:  # a look only: the request is refused for another reason, nothing is counted
                return RateDecision(None, 0.0, self._headers())
            requests_short = 1.0 - self._requests
            tokens_short = tokens - self._tokens
            if requests_short <= 0 and tokens_short <= 0:
                self._requests -= 1.0
                self._tokens -= tokens
                return RateDecision(None, 0.0, self._headers())
            # Seconds (scaled: what the client waits in real time) until both buckets hold enough.
            wait_requests = max(0.0, requests_short) / self.limit.requests_per_minute * 60.0 * self._scale
            wait_tokens = max(0.0, tokens_short) / self.limit.tokens_per_minute * 60.0 * self._scale
            refused = "tokens" if wait_tokens >= wait_requests else "requests"
            return RateDecision(refused, max(wait_requests, wait_tokens), self._headers())

    def _headers(self) -> dict[str, str]:
        limit = self.limit
        refill_requests = (limit.requests_per_minute - self._requests) / limit.requests_per_minute * 60.0 * self._scale
        refill_tokens = (limit.tokens_per_minute - self._tokens) / limit.tokens_per_minute * 60.0 * self._scale
        return {
            "x-ratelimit-limit-requests": str(limit.requests_per_minute),
            "x-ratelimit-limit-tokens": str(limit.tokens_per_minute),
            "x-ratelimit-remaining-requests": str(max(0, int(self._requests))),
            "x-ratelimit-remaining-tokens": str(max(0, int(self._tokens))),
            "x-ratelimit-reset-requests": go_duration(refill_requests),
            "x-ratelimit-reset-tokens": go_duration(refill_tokens),
        }


@dataclass(frozen=True)
class RateDecision:
    refused: str | None  # None: taken; "requests" or "tokens": the limit that refused
    wait_s: float
    headers: dict[str, str]


def go_duration(seconds: float) -> str:
    """A duration as OpenAI's headers write it (Go's format): "20ms", "1s", "1.5s", "6m0s"."""
    if seconds <= 0:
        return "0s"
    if seconds < 1:
        return f"{max(1, round(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60.0)
    text = f"{rest:.3f}".rstrip("0").rstrip(".") + "s"
    if minutes >= 1:
        hours, minutes = divmod(int(minutes), 60)
        text = f"{minutes}m{text}"
        if hours:
            text = f"{hours}h{text}"
    return text
