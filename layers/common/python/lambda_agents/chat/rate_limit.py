"""The per-user chat limit: at most ``limit`` accepted messages in ANY ``window_s`` seconds.

A sliding-window log: the times of the messages accepted in the last window. A message is
accepted when fewer than ``limit`` lie within the window before it; otherwise the answer is the
wait until the oldest of them leaves the window. Unlike a fixed window (which let 40 messages
through in 19 s across a boundary with a limit of 20 a minute), no span of ``window_s`` ever
holds more than ``limit``. Only accepted messages count: a request refused here stores nothing,
and one that fails after it was counted (a 409 or 503 while storing the message) gives its place
back (``release``). The log holds at most ``limit`` times, which bounds its size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MAX_LIMIT = 1000  # the log holds this many times at most: ~10 KB per user at worst


@dataclass(frozen=True)
class WindowDecision:
    accepted: bool
    times: tuple[int, ...]  # the log to store when accepted: times within the window, this one last
    wait_s: float  # until a place frees up, when refused


def decide(times: tuple[int, ...], now_ms: int, limit: int, window_s: int) -> WindowDecision:
    """Accept the message at ``now_ms`` given the log ``times`` (epoch ms), or say how long to wait."""
    window_ms = window_s * 1000
    recent = tuple(sorted(t for t in times if t > now_ms - window_ms))
    if len(recent) >= limit:
        frees_at = recent[len(recent) - limit] + window_ms
        return WindowDecision(False, recent, max(1.0, math.ceil(frees_at - now_ms) / 1000))
    return WindowDecision(True, (*recent, now_ms), 0.0)


def without(times: tuple[int, ...], stamp: int) -> tuple[int, ...]:
    """The log with one occurrence of ``stamp`` given back."""
    kept = list(times)
    if stamp in kept:
        kept.remove(stamp)
    return tuple(kept)
