"""When each time zone's cohort must start generating so that the provider's rate limit serves it
before its first slot (the fan-out's "ready before the first slot").

At the generation hour a zone's whole cohort is queued, and the fan-out serves at most the plans a
minute its share of the account's limits allows (a plan counts its prompt and its max_tokens on
arrival). A cohort larger than that rate times its window (generation hour to the first slot of
the schedule map) cannot be ready in time; nor can a small one queued behind a large neighbour
still draining. So the cohorts are planned backwards from the latest: each must be done before
its first slot and before the next cohort starts (then every cohort has the whole rate while it
runs, whatever order SQS hands the messages in), and starts whole hours before its generation
hour when it needs more time than that leaves: the day's plans are then made the evening
before, for the user's next local date.

Plans are counted at ``PACING_EFFICIENCY`` of the share's rate: the containers' pacing used
91-97% of it in the fan-out benchmark and 96% in the simulation (``devtools.fanout_sim``).
A cohort that would need more than ``max_lead`` is started at ``max_lead`` and reported as not
fitting: the account's limit is too small for it (ask for more, or make the day through the Batch API).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from ..llm.rate_budget import RateShare
from ..timezones import zone as tz_zone
from .tokens import PLAN_PROMPT_TOKENS, estimate_max_tokens

PACING_EFFICIENCY = 0.9
HOUR = timedelta(hours=1)
# Done this long before the first slot: the hourly run queues a few minutes past its hour, and the
# last plans of a cohort take their own minute.
MARGIN = timedelta(minutes=10)


@dataclass(frozen=True)
class CohortDemand:
    """One zone's users for one local date: queued at ``default_start`` (its generation hour, UTC)
    unless started earlier, and due before ``deadline`` (its first slot, UTC)."""

    zone: str
    local_date: str
    users: int
    default_start: datetime
    deadline: datetime

    @property
    def key(self) -> tuple[str, str]:
        return self.zone, self.local_date


@dataclass(frozen=True)
class CohortStart:
    lead_hours: int  # whole hours before the generation hour the cohort is queued
    start: datetime
    expected_done: datetime
    fits: bool  # done before its first slot at the planned rate


def fanout_plans_per_minute(
    requests_per_minute: int, tokens_per_minute: int, *, share: float, max_slots: int
) -> float | None:
    """The plans a minute the fan-out's share of the account's limits allows (a plan counts its
    prompt and the max_tokens of ``max_slots`` slots on arrival); None when no limit is known."""
    limits = RateShare.of_account(requests_per_minute, tokens_per_minute, share=share)
    return None if limits is None else limits.requests_a_minute(PLAN_PROMPT_TOKENS + estimate_max_tokens(max_slots))


def plan_starts(
    demands: Iterable[CohortDemand], plans_per_minute: float, *, max_lead: timedelta = timedelta(hours=18)
) -> dict[tuple[str, str], CohortStart]:
    """Each zone's start, from the latest cohort back: every cohort done by its deadline and before
    the next one starts, started as late as that allows but never after its generation hour."""
    if plans_per_minute <= 0:
        raise ValueError("plans_per_minute must be positive")
    rate = plans_per_minute * PACING_EFFICIENCY
    groups = _by_start(demands)
    starts: dict[tuple[str, str], CohortStart] = {}
    free_until: datetime | None = None
    max_lead_hours = max(0, math.floor(max_lead / HOUR))
    for default_start, members in sorted(groups.items(), reverse=True):
        users = sum(member.users for member in members)
        deadline = min(member.deadline for member in members) - MARGIN
        end = deadline if free_until is None else min(deadline, free_until)
        needed = timedelta(minutes=users / rate)
        latest = end - needed
        lead = 0 if latest >= default_start else math.ceil((default_start - latest) / HOUR)
        lead = min(lead, max_lead_hours)
        start = default_start - lead * HOUR
        done = start + needed
        for member in members:
            starts[member.key] = CohortStart(lead, start, done, done <= end)
        if users:
            free_until = start if free_until is None else min(free_until, start)
    return starts


def cohort_demands(
    now: datetime,
    users_by_zone: Mapping[str, int],
    *,
    generation_hour: int,
    first_slot_minutes: int,
    horizon: timedelta = timedelta(hours=48),
) -> list[CohortDemand]:
    """Every zone's cohorts whose generation hour is in ``[now - 1 day, now + horizon]``: the
    ones due now (late or early) and the later ones they must make room for. A cohort's
    ``default_start`` is the first hourly run (at ``now``'s minute) at or after its generation
    hour: a zone half an hour off UTC is queued 35 minutes into its hour, and has that much less."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    demands = []
    for zone, users in users_by_zone.items():
        tz = tz_zone(zone)
        today = now.astimezone(tz).date()
        for offset in range(-1, math.ceil(horizon / timedelta(days=1)) + 2):
            local_date = today + timedelta(days=offset)
            midnight = datetime.combine(local_date, time(), tz)
            generation = (midnight + timedelta(hours=generation_hour)).astimezone(UTC)
            default_start = generation + (now - generation) % HOUR
            if not now - timedelta(days=1) <= default_start <= now + horizon:
                continue
            deadline = (midnight + timedelta(minutes=first_slot_minutes)).astimezone(UTC)
            demands.append(CohortDemand(zone, local_date.isoformat(), users, default_start, deadline))
    return demands


def _by_start(demands: Iterable[CohortDemand]) -> dict[datetime, Sequence[CohortDemand]]:
    """Zones on the same offset are queued by the same run: one cohort."""
    groups: dict[datetime, list[CohortDemand]] = {}
    for demand in demands:
        if demand.users < 0:
            raise ValueError(f"{demand.zone}: a cohort cannot have {demand.users} users")
        groups.setdefault(demand.default_start, []).append(demand)
    return dict(groups)
