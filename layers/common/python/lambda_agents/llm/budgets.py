"""Budgets that learn: what answers of each output type needed, remembered in the container.

After an answer of a type needed 3,000 tokens, the next call of that type does not start at a
1,000-token guess that must truncate: it starts at the largest need of the type's last
``LEARNED_WINDOW`` answers plus the truncation margin (``truncation.with_margin``), never below
the caller's own first budget, never above the ceiling, and never above ``LEARNED_START_CAP``
times the caller's first budget: providers count ``max_tokens`` against the rate limit when a
request arrives, so the memory corrects a caller's estimate, it does not send everything at the
ceiling. A window, not an all-time maximum, lets one outlier age out.

A type is keyed by what decides the answer's size, not by Python class identity: the model's
name, the strategy and a hash of the wire schema for structured output (the Commander's output
class is rebuilt per call, one schema per slot count), the model and the purpose for calls whose
answer the caller reads itself.

Kept in memory only, per container: a cold container relearns a type after one answer (at most
one extra call per type), while a shared store would add a read to every model call, a table and
its permissions, and would spread one deployment's outliers to every container.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict, deque
from typing import Any

from .truncation import with_margin
from .types import ChatRequest

LEARNED_WINDOW = 32
LEARNED_START_CAP = 8
MAX_REMEMBERED_TYPES = 256


class LearnedBudgets:
    """Thread-safe memory of the completion tokens recent answers of each type needed."""

    def __init__(self, window: int = LEARNED_WINDOW, max_types: int = MAX_REMEMBERED_TYPES) -> None:
        self._window = window
        self._max_types = max_types
        self._needs: OrderedDict[str, deque[int]] = OrderedDict()
        self._lock = threading.Lock()

    def record(self, key: str, tokens: int) -> None:
        if tokens <= 0:
            return
        with self._lock:
            needs = self._needs.pop(key, None) or deque(maxlen=self._window)
            needs.append(tokens)
            self._needs[key] = needs
            while len(self._needs) > self._max_types:
                self._needs.popitem(last=False)

    def need(self, key: str) -> int | None:
        """The largest need among the type's remembered answers, or None."""
        with self._lock:
            needs = self._needs.get(key)
            return max(needs) if needs else None

    def start(self, key: str, first: int, ceiling: int) -> int:
        """The first attempt's max_tokens for a call whose policy would start at ``first``."""
        learned = self.need(key)
        if learned is None:
            return first
        return max(first, min(ceiling, first * LEARNED_START_CAP, with_margin(learned)))

    def clear(self) -> None:
        with self._lock:
            self._needs.clear()


CONTAINER_BUDGETS = LearnedBudgets()


def structured_key(model_name: str, strategy: str, wire_schema: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(wire_schema, sort_keys=True).encode("utf-8")).hexdigest()[:16]
    return f"{model_name}|{strategy}|{digest}"


def call_key(model_name: str, request: ChatRequest) -> str:
    return f"{model_name}|call|{request.purpose}"
