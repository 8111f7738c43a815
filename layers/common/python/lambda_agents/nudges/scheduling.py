"""The hourly scheduler's run: which cohorts (a zone's users for a local date) it queues now.

Without the provider's limits (the template's default) a zone is queued at its local generation
hour (``nudges.due``), for that day. With them (``OPENAI_TOKENS_PER_MINUTE`` /
``OPENAI_REQUESTS_PER_MINUTE`` and the fan-out's share), the run counts each zone's users and
plans every cohort of the next two days backwards from the latest (``nudges.fanout_starts``), so
that the share's rate makes each plan before its first slot: a cohort too large for its window is
queued whole hours before its generation hour, for its next local date, and a cohort that cannot
fit even then is logged and counted (``NudgeCohortsNotFitting``). Because a plan changes with the
counts between runs, a cohort is queued at the first run at or after its planned start (until its
generation hour's catch-up window has passed) and marked as queued, so a start that moves across
an hour is neither skipped nor queued twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from ..timezones import known_timezones
from .due import due_zones
from .fanout_starts import CohortDemand, CohortStart, cohort_demands, plan_starts
from .slots import parse_local_time


class UserDirectory(Protocol):
    def pages_in_timezone(self, timezone: str) -> Iterator[list[dict[str, Any]]]: ...

    def count_in_timezone(self, timezone: str) -> int: ...


class JobQueue(Protocol):
    def send(self, jobs: list[dict[str, str]]) -> int: ...


class CohortMarks(Protocol):
    """Which cohorts have been queued (by a planned run), so a later run does not queue them again."""

    def queued(self, zone: str, local_date: str) -> bool: ...

    def mark(self, zone: str, local_date: str) -> None: ...


@dataclass(frozen=True)
class Cohort:
    zone: str
    local_date: str
    lead_hours: int = 0


@dataclass
class SchedulerRun:
    queued: int = 0
    cohorts: list[Cohort] = field(default_factory=list)
    not_fitting: list[tuple[CohortDemand, CohortStart]] = field(default_factory=list)


@dataclass
class NudgeScheduler:
    users: UserDirectory
    queue: JobQueue
    marks: CohortMarks | None
    generation_hour: int
    catch_up_hours: int
    # The fan-out's plans a minute within its share of the provider's limits; None: not known.
    plans_per_minute: float | None = None
    first_slot_minutes: int = 0
    zones: Iterable[str] | None = None

    def run(self, now: datetime) -> SchedulerRun:
        result = SchedulerRun()
        for cohort in self._due(now, result):
            for page in self.users.pages_in_timezone(cohort.zone):
                jobs = [{"userId": str(item["userId"]), "localDate": cohort.local_date} for item in page]
                result.queued += self.queue.send(jobs)
            if self.plans_per_minute is not None and self.marks is not None:
                self.marks.mark(cohort.zone, cohort.local_date)
            result.cohorts.append(cohort)
        return result

    def _due(self, now: datetime, result: SchedulerRun) -> list[Cohort]:
        zones = sorted(self.zones if self.zones is not None else known_timezones())
        if self.plans_per_minute is None or self.marks is None:
            due_now = due_zones(now, self.generation_hour, self.catch_up_hours, zones)
            return [Cohort(zone.timezone, zone.local_date) for zone in due_now]
        counts = {zone: count for zone in zones if (count := self.users.count_in_timezone(zone)) > 0}
        demands = cohort_demands(
            now, counts, generation_hour=self.generation_hour, first_slot_minutes=self.first_slot_minutes
        )
        starts = plan_starts(demands, self.plans_per_minute)
        catch_up = timedelta(hours=self.catch_up_hours)
        due = []
        for demand in demands:
            start = starts[demand.key]
            if start.start <= now < demand.default_start + catch_up and not self.marks.queued(*demand.key):
                due.append(Cohort(demand.zone, demand.local_date, start.lead_hours))
                if not start.fits:
                    result.not_fitting.append((demand, start))
        return due


def first_slot_minutes(schedule_map: Mapping[str, Iterable[str]]) -> int:
    """The earliest slot any user can have (minutes after midnight): every plan is due by it."""
    times = [parse_local_time(text) for texts in schedule_map.values() for text in texts]
    if not times:
        raise ValueError("the schedule map has no times")
    return min(times)
