"""Per-run counts of a generator invocation (docs/nudges.md#metrics: users processed, nudges
generated, fallbacks by cause, attempts, finish_reason counts). Pure; the handler emits them."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RunReport:
    """Thread-safe: the records of a batch run at once."""

    users_processed: int = 0
    nudges_generated: int = 0
    attempts: int = 0
    tokens: int = 0  # every attempt's, fallbacks' included: what the provider billed
    cached_tokens: int = 0  # the part of their prompt tokens the provider's cache served
    cost_usd: float = 0.0  # what they cost at the price table's prices (models without a price: not included)
    failed_records: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    fallbacks_by_cause: Counter[str] = field(default_factory=Counter)
    finish_reasons: Counter[str] = field(default_factory=Counter)
    deferred: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def defer(self, reason: str) -> None:
        """Count a user whose run was deferred to a redelivery (``reason``: deadline, rate_limit)."""
        with self._lock:
            self.deferred[reason] += 1

    def add(self, outcome: dict[str, Any]) -> None:
        """Count one GenerationOutcome.as_dict() (what the idempotent record handler returns)."""
        with self._lock:
            self._add(outcome)

    def _add(self, outcome: dict[str, Any]) -> None:
        self.users_processed += 1
        self.statuses[str(outcome.get("status"))] += 1
        self.tokens += int(outcome.get("totalTokens", 0))
        self.cached_tokens += int(outcome.get("cachedTokens", 0))
        self.cost_usd += float(outcome.get("costUsd") or 0.0)
        if outcome.get("status") != "generated":
            return
        self.nudges_generated += int(outcome.get("nudgesEnabled", 0))
        self.attempts += int(outcome.get("attempts", 0))
        if outcome.get("fallbackUsed"):
            self.fallbacks_by_cause[str(outcome.get("fallbackReason") or "unknown")] += 1
        self.finish_reasons.update(str(reason) for reason in outcome.get("finishReasons", []))
