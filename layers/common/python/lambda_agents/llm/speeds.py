"""How fast each model answers, learned in the container, and what an attempt may ask for in the
time left.

A real model writes 35-80 tokens/s after a first token that takes 0.2-1.2 s (a reasoning model
thinks for tens of seconds first), so a 4,000-token answer takes about a minute: the time an
attempt needs follows from its ``max_tokens`` and the model's pace, and an attempt that cannot
finish before the deadline is a call paid for nothing. Every streamed answer tells its pace
(``ResponseTiming``): the time to its first token, then tokens per second. A container keeps the
last ``SPEED_WINDOW`` of each model's and plans with a cautious reading of them: the
``PLAN_RATE_PERCENTILE``-th percentile of the rates and the ``PLAN_FIRST_TOKEN_PERCENTILE``-th of
the first-token times, so one fast answer does not make the next plan optimistic. Before a model
has answered in this container its prior is used: the adapter's ``speed_prior`` (from the
function's settings; the offline model's is instant), else gpt-4o's typical pace.

Answers shorter than ``MIN_TOKENS_TO_LEARN`` say little about the rate (chunking jitter
dominates), and a non-streamed answer gives only its total time: both still teach the
first-token time or the whole duration conservatively, as documented on ``record``. An answer the
deadline cut teaches its pace too: it is the slow answer the next plan most needs to know of.

A reading older than ``SPEED_MEMORY_S`` is forgotten: a provider's slow hour passes, and a
container that learned it would otherwise hand every chat answer to its worker for the rest of its
life, since answers it no longer makes in the request never teach it the pace came back.

A plan is a forecast; the stream shows the real pace within seconds. ``PaceForecast`` compares
them as the answer arrives: for a caller that asks for it (``Pacing.cut_when_late``: the chat
route, which hands a late answer to its worker, which has minutes) an answer that at its observed
pace (with ``PACE_TOLERANCE`` to spare) cannot reach its planned size before the deadline is cut
at once, seconds after it started, not at the deadline with most of it billed and nothing usable.

Kept in memory per container, like learned budgets (``budgets.py``), for the same reasons; a
container whose answers are made elsewhere (the chat's request, whose slow answers go to its worker)
learns the other's readings through ``shared_learning``.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from .types import ResponseTiming

SPEED_WINDOW = 24
MIN_TOKENS_TO_LEARN = 32
PLAN_RATE_PERCENTILE = 20
PLAN_FIRST_TOKEN_PERCENTILE = 80
MAX_REMEMBERED_MODELS = 32
SPEED_MEMORY_S = 900.0
# A stream is judged on its pace only after this much of it (or this share of the time it had, when
# that is shorter): a few chunks say little, tokens come in bursts.
MIN_SECONDS_TO_PROJECT = 1.5
PROJECT_AFTER_SHARE = 0.1
# An answer is cut as late only when even this much faster than observed it would pass the deadline:
# a model's pace varies within its range (gpt-4o: 35-80 tok/s), a slow hour is several times slower.
PACE_TOLERANCE = 1.5


# One reading as containers share it: when (epoch seconds), which ("rate": tokens per second,
# "first_token": seconds to it) and its value.
PaceReading = tuple[float, str, float]


@dataclass(frozen=True)
class SpeedEstimate:
    """A model's pace: seconds to the first token, then tokens per second."""

    first_token_s: float
    tokens_per_s: float
    learned: bool = False

    def seconds_for(self, tokens: int) -> float:
        return self.first_token_s + max(0, tokens) / self.tokens_per_s

    def tokens_within(self, seconds: float) -> int:
        return max(0, math.floor((seconds - self.first_token_s) * self.tokens_per_s))

    def describe(self) -> str:
        source = "learned" if self.learned else "prior"
        return f"{self.tokens_per_s:.0f} tok/s after {self.first_token_s:.1f} s ({source})"


# gpt-4o as measured: the middle of 35-80 tokens/s, the slow end of a 0.2-1.2 s first token.
DEFAULT_PRIOR = SpeedEstimate(first_token_s=1.2, tokens_per_s=60.0)
# The offline model answers at once; planning must never refuse it.
INSTANT = SpeedEstimate(first_token_s=0.0, tokens_per_s=1_000_000.0)


@dataclass(frozen=True)
class AttemptPlan:
    """What an attempt may ask for. ``max_tokens`` None: no attempt fits (``reason`` says why).
    ``speed`` is the pace it was planned with (the request waits for its first token by it)."""

    max_tokens: int | None
    seconds: float
    reason: str
    speed: SpeedEstimate


def _percentile(values: list[float], percentile: int) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(len(ordered) * percentile / 100) - 1))
    return ordered[index]


class ModelSpeeds:
    """Thread-safe memory of each model's recent pace (first token, tokens per second), each
    reading kept ``memory_s`` seconds on ``clock``."""

    def __init__(
        self,
        window: int = SPEED_WINDOW,
        *,
        memory_s: float = SPEED_MEMORY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._window = window
        self._memory_s = memory_s
        self._clock = clock
        self._rates: dict[str, deque[tuple[float, float]]] = {}
        self._first_tokens: dict[str, deque[tuple[float, float]]] = {}
        self._merged: dict[str, set[tuple[float, str]]] = {}  # another container's readings, learned once
        self._epoch_offset: float | None = None  # epoch seconds minus ``clock``'s, fixed when first shared
        self._lock = threading.Lock()

    def record(self, model: str, timing: ResponseTiming | None, completion_tokens: int) -> None:
        """Learn from one answer, whole or cut. A streamed answer teaches its first-token time and,
        past ``MIN_TOKENS_TO_LEARN`` tokens, its rate over the generation after the first token. A
        non-streamed one teaches only a rate over its whole duration (first token included), which
        errs slow, as a plan should."""
        if timing is None or timing.total_s <= 0:
            return
        now = self._clock()
        with self._lock:
            if len(self._rates) >= MAX_REMEMBERED_MODELS and model not in self._rates:
                return
            rates = self._rates.setdefault(model, deque(maxlen=self._window))
            first_tokens = self._first_tokens.setdefault(model, deque(maxlen=self._window))
            if timing.streamed:
                first_tokens.append((now, timing.first_token_s))
                if completion_tokens >= MIN_TOKENS_TO_LEARN and timing.generation_s > 0:
                    rates.append((now, completion_tokens / timing.generation_s))
            elif completion_tokens >= MIN_TOKENS_TO_LEARN:
                rates.append((now, completion_tokens / timing.total_s))

    def estimate(self, model: str, prior: SpeedEstimate = DEFAULT_PRIOR) -> SpeedEstimate:
        """The pace to plan ``model``'s next attempt with: learned, else ``prior``."""
        since = self._clock() - self._memory_s
        with self._lock:
            rates = [value for at, value in self._rates.get(model, ()) if at >= since]
            first_tokens = [value for at, value in self._first_tokens.get(model, ()) if at >= since]
        if not rates and not first_tokens:
            return prior
        rate = _percentile(rates, PLAN_RATE_PERCENTILE) if rates else prior.tokens_per_s
        first = _percentile(first_tokens, PLAN_FIRST_TOKEN_PERCENTILE) if first_tokens else prior.first_token_s
        return SpeedEstimate(first_token_s=first, tokens_per_s=max(rate, 1e-3), learned=True)

    def clear(self) -> None:
        with self._lock:
            self._rates.clear()
            self._first_tokens.clear()
            self._merged.clear()
            self._epoch_offset = None

    def readings(self, model: str, now_epoch: float) -> list[PaceReading]:
        """``model``'s remembered readings, each dated in epoch seconds (another container's clock
        is not this one's monotonic one), for another container to learn from (``shared_learning``).
        The two clocks are read apart, so the offset between them is taken once: a reading shared
        again carries the same date, by which the other container knows it (``merge``), and an
        unchanged memory is shared unchanged."""
        now = self._clock()
        with self._lock:
            if self._epoch_offset is None:
                self._epoch_offset = now_epoch - now
            offset = self._epoch_offset
            kinds = (("rate", self._rates.get(model, ())), ("first_token", self._first_tokens.get(model, ())))
            return [(round(at + offset, 3), kind, value) for kind, taken in kinds for at, value in taken]

    def merge(self, model: str, readings: list[PaceReading], now_epoch: float) -> int:
        """Learn ``readings`` another container made (``readings``' shape) beside this one's own,
        each once and at its own age; the newest ``window`` of each kind are kept. How many were new."""
        now = self._clock()
        learned = 0
        with self._lock:
            if len(self._rates) >= MAX_REMEMBERED_MODELS and model not in self._rates:
                return 0
            seen = self._merged.setdefault(model, set())
            for kind, memory in (("rate", self._rates), ("first_token", self._first_tokens)):
                new = [(at, value) for at, k, value in readings if k == kind and (at, k) not in seen]
                if not new:
                    continue
                seen.update((at, kind) for at, _ in new)
                merged = sorted([*memory.get(model, ()), *((now - (now_epoch - at), value) for at, value in new)])
                memory[model] = deque(merged[-self._window :], maxlen=self._window)
                learned += len(new)
        return learned


@dataclass(frozen=True)
class PaceForecast:
    """Whether an answer sent at ``started_at`` still reaches ``planned_tokens`` by ``deadline_at``
    (all on the stream's clock): the plan made before the call, checked against the pace the stream
    shows.

    An answer already past its planned size is held to ``max_tokens``, the most it may write.
    Before its first token, the planned pace (``planned_tokens_per_s``) says how late that token
    may come (``first_token_by``): a provider slow to start is given up on when even then the
    answer could not be written in time, not when the deadline comes with nothing written."""

    planned_tokens: int
    max_tokens: int
    started_at: float
    deadline_at: float
    planned_tokens_per_s: float | None = None

    def first_token_by(self) -> float | None:
        """The latest moment a first token still leaves time for the planned answer at the planned
        pace (with the tolerance to spare); None without a planned pace."""
        if not self.planned_tokens_per_s or self.planned_tokens_per_s <= 0:
            return None
        return self.deadline_at - self.planned_tokens / (self.planned_tokens_per_s * PACE_TOLERANCE)

    def late(self, received_tokens: int, first_token_at: float, now: float) -> str | None:
        """Why the answer cannot finish in time at its observed pace, or None while it can (or
        while too little of it has arrived to tell)."""
        generating_s = now - first_token_at
        evidence_s = min(MIN_SECONDS_TO_PROJECT, PROJECT_AFTER_SHARE * (self.deadline_at - self.started_at))
        if received_tokens < MIN_TOKENS_TO_LEARN or generating_s < evidence_s:
            return None
        rate = received_tokens / generating_s
        target = self.planned_tokens if received_tokens < self.planned_tokens else self.max_tokens
        finish_at = now + max(0, target - received_tokens) / (rate * PACE_TOLERANCE)
        if finish_at <= self.deadline_at:
            return None
        return (
            f"at {rate:.0f} tok/s the {target}-token answer would end {finish_at - self.deadline_at:.1f} s past "
            f"the deadline ({received_tokens} tokens in {generating_s:.1f} s)"
        )


CONTAINER_SPEEDS = ModelSpeeds()


def speed_prior(model: object) -> SpeedEstimate:
    """The pace a model adapter says to expect before it has answered (its ``speed_prior``
    attribute, set from the function's settings), else ``DEFAULT_PRIOR``."""
    prior = getattr(model, "speed_prior", None)
    return prior if isinstance(prior, SpeedEstimate) else DEFAULT_PRIOR


def plan_attempt(
    speed: SpeedEstimate,
    *,
    max_tokens: int,
    seconds_left: float | None,
    expected_tokens: int | None = None,
) -> AttemptPlan:
    """Whether an attempt of ``max_tokens`` can finish in ``seconds_left`` at ``speed``.

    It fits: go as asked. It does not, but the answer's expected size (``expected_tokens``: what
    answers of its type needed, or what a truncated answer showed) does: go with ``max_tokens``
    lowered to what fits, so the provider stops where the deadline would anyway (and the rate
    limit counts less). Otherwise no attempt: one that cannot finish is paid for nothing.
    """
    needed = speed.seconds_for(max_tokens)
    if seconds_left is None:
        return AttemptPlan(max_tokens, needed, f"{max_tokens} tokens at {speed.describe()}: ~{needed:.1f} s", speed)
    if needed <= seconds_left:
        return AttemptPlan(
            max_tokens,
            needed,
            f"{max_tokens} tokens at {speed.describe()}: ~{needed:.1f} s of {seconds_left:.1f} s left",
            speed,
        )
    fits = speed.tokens_within(seconds_left)
    if expected_tokens is not None and 0 < expected_tokens <= fits:
        lowered = min(max_tokens, fits)
        return AttemptPlan(
            lowered,
            speed.seconds_for(lowered),
            f"{max_tokens} tokens would take ~{needed:.1f} s at {speed.describe()}, {seconds_left:.1f} s left: "
            f"lowered to {lowered}, above the ~{expected_tokens} expected",
            speed,
        )
    return AttemptPlan(
        None,
        needed,
        f"{max_tokens} tokens would take ~{needed:.1f} s at {speed.describe()}, only {seconds_left:.1f} s left",
        speed,
    )
