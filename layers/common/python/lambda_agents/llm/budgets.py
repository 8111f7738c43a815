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

Kept in memory per container: a cold container relearns a type after one answer (at most one
extra call per type), while a store read on every model call would add its latency to each. Where
one function's container cannot learn what it needs because another function makes those calls
(the interview's request hands a turn over because of a prior its worker already knows is wrong),
the other's needs are learned through ``shared_learning``: read now and then, kept beside this
container's own (``merge``), never counted as its own answers.
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
        self._shared: dict[str, tuple[int, ...]] = {}  # another container's needs, as it last shared them
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
        """The largest need among the type's remembered answers (this container's, and what another
        shared), or None."""
        with self._lock:
            needs = [*self._needs.get(key, ()), *self._shared.get(key, ())]
            return max(needs) if needs else None

    def needs(self, prefix: str) -> dict[str, list[int]]:
        """This container's own remembered needs of the types whose key starts with ``prefix`` (a
        model's: ``<model>|``), for another container to learn (``shared_learning``)."""
        with self._lock:
            return {key: list(needs) for key, needs in self._needs.items() if key.startswith(prefix) and needs}

    def merge(self, shared: dict[str, list[int]]) -> None:
        """Another container's needs (``needs``' shape), each type's replacing what it shared before."""
        with self._lock:
            for key, needs in list(shared.items())[: self._max_types]:
                kept = tuple(tokens for tokens in needs[-self._window :] if tokens > 0)
                if kept:
                    self._shared[key] = kept
            while len(self._shared) > self._max_types:
                self._shared.pop(next(iter(self._shared)))

    def start(self, key: str, first: int, ceiling: int) -> int:
        """The first attempt's max_tokens for a call whose policy would start at ``first``."""
        learned = self.need(key)
        if learned is None:
            return first
        return max(first, min(ceiling, first * LEARNED_START_CAP, with_margin(learned)))

    def clear(self) -> None:
        with self._lock:
            self._needs.clear()
            self._shared.clear()


CONTAINER_BUDGETS = LearnedBudgets()


def structured_key(model_name: str, strategy: str, wire_schema: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(wire_schema, sort_keys=True).encode("utf-8")).hexdigest()[:16]
    return f"{model_name}|{strategy}|{digest}"


def call_key(model_name: str, request: ChatRequest) -> str:
    return f"{model_name}|call|{request.purpose}"
