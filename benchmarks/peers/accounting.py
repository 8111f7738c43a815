"""Turns one side's per-user outcomes and the server's bill into the benchmark's table row.

How it works, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .commander_task import SLOT_COUNT, nudge_count, served_by_model
from .fault_mix import Bill


@dataclass(frozen=True)
class UserOutcome:
    user: int
    returned: Any | None  # the side's output when it did not raise, else None
    error: str | None = None
    reported_tokens: int | None = None  # usage the side handed back to its caller

    @property
    def served(self) -> bool:
        return self.returned is not None and served_by_model(self.returned)

    @property
    def fell_back(self) -> bool:
        return self.returned is None

    @property
    def nudges_delivered(self) -> int:
        # A side that raised falls back to the rule-based output: always SLOT_COUNT nudges.
        return SLOT_COUNT if self.fell_back else min(SLOT_COUNT, nudge_count(self.returned))


class _CostPerSuccess:
    """A row's price of one user the model served: the server's calls and tokens (failed
    attempts included) over the users served; None when the model served nobody."""

    calls: int
    billed_tokens: int
    served: int

    @property
    def calls_per_success(self) -> float | None:
        return self.calls / self.served if self.served else None

    @property
    def tokens_per_success(self) -> float | None:
        return self.billed_tokens / self.served if self.served else None


@dataclass(frozen=True)
class SideRow(_CostPerSuccess):
    side: str
    users: int
    served: int
    fallbacks: int
    users_missing_nudges: int
    calls: int
    billed_tokens: int
    truncated: int
    reported_tokens: int | None  # usage the side reported for its served users
    billed_for_served: int  # what the server billed for those same users
    wall_s: float
    failures: dict[str, int]

    @property
    def served_share(self) -> float:
        return self.served / self.users if self.users else 0.0


def summarise(side: str, outcomes: Iterable[UserOutcome], bill: Bill, wall_s: float) -> SideRow:
    items = list(outcomes)
    served = [item for item in items if item.served]
    reported = [item.reported_tokens for item in served]
    failures: dict[str, int] = {}
    for item in items:
        if item.fell_back:
            kind = (item.error or "unknown").split(":")[0]
            failures[kind] = failures.get(kind, 0) + 1
    return SideRow(
        side=side,
        users=len(items),
        served=len(served),
        fallbacks=sum(item.fell_back for item in items),
        users_missing_nudges=sum(item.nudges_delivered < SLOT_COUNT for item in items),
        calls=bill.requests,
        billed_tokens=bill.total_tokens,
        truncated=bill.truncated,
        reported_tokens=sum(value or 0 for value in reported) if reported and None not in reported else None,
        billed_for_served=sum(bill.tokens_by_user.get(item.user, 0) for item in served),
        wall_s=wall_s,
        failures=failures,
    )


CLASS_ORDER = ("clean", "verbose", "wrong_length", "refusal", "content_filter", "429", "500", "slow")


@dataclass(frozen=True)
class ClassRow(_CostPerSuccess):
    """One fault class of a side: its users (a user with several faults counts in each of their
    classes), how many the model served, and what those users cost at the server."""

    label: str
    users: int
    served: int
    calls: int
    billed_tokens: int


def by_fault_class(outcomes: Iterable[UserOutcome], bill: Bill, labels: dict[int, list[str]]) -> list[ClassRow]:
    """Rows in CLASS_ORDER for the classes present; ``labels`` maps a user to their fault labels."""
    members: dict[str, list[UserOutcome]] = {}
    for item in outcomes:
        for label in labels.get(item.user) or ["clean"]:
            members.setdefault(label, []).append(item)
    order = [label for label in CLASS_ORDER if label in members] + sorted(set(members) - set(CLASS_ORDER))
    return [
        ClassRow(
            label=label,
            users=len(members[label]),
            served=sum(item.served for item in members[label]),
            calls=sum(bill.requests_by_user.get(item.user, 0) for item in members[label]),
            billed_tokens=sum(bill.tokens_by_user.get(item.user, 0) for item in members[label]),
        )
        for label in order
    ]
