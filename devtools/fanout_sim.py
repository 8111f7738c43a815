"""One day of the nudge fan-out in simulated time: how long each time zone's cohort takes, who is
served by the model, and what it costs, for populations no local run can hold.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from itertools import combinations
from typing import Any

from lambda_agents.llm.policy import DEADLINE_SLACK_S
from lambda_agents.llm.prices import cost_usd
from lambda_agents.llm.rate_budget import RateBudget, RateShare
from lambda_agents.llm.speeds import DEFAULT_PRIOR, ModelSpeeds, plan_attempt
from lambda_agents.llm.types import ResponseTiming, Usage
from lambda_agents.nudges.fanout_starts import fanout_plans_per_minute
from lambda_agents.nudges.generation import deferral_s
from lambda_agents.nudges.scheduling import NudgeScheduler, first_slot_minutes
from lambda_agents.nudges.slots import DEFAULT_SCHEDULE_MAP, build_slot_table, parse_local_time
from lambda_agents.nudges.tokens import estimate_max_tokens
from lambda_agents.timezones import zone as zone_named

from devtools.cohort_marks import MemoryCohortMarks
from devtools.fake_openai import GPT_4O, SpeedProfile
from devtools.fanout_plan import DEPLOYED, Deployed, plan_fanout, plan_prompt_tokens

MODEL = "gpt-4o"  # priced by the product's table (lambda_agents.llm.prices), as published by OpenAI
PRICES_READ_ON = "2025-06"
LAMBDA_USD_PER_GB_S = 0.0000166667  # x86, us-east-1
DYNAMODB_TABLE_WCU_PER_S = 40_000  # an on-demand table's default maximum write throughput
# A plan's write: the schedule item (~8 KB with 15 nudges) and four post items, in one transaction
# (which costs twice): (8 + 4) x 2 write units.
WCU_PER_PLAN = 24
ANSWER_TOKENS = 3_000  # what a 15-slot plan writes (the fan-out benchmark's plans)

# Time-zone mixes of a day's population: one country, and a global consumer app (weights after
# the shares of smartphone users by region; each zone stands for its neighbours on the same offset).
MIXES: dict[str, tuple[tuple[str, float], ...]] = {
    "japan": (("Asia/Tokyo", 1.0),),
    "global": (
        ("America/Los_Angeles", 0.09),
        ("America/Denver", 0.02),
        ("America/Chicago", 0.07),
        ("America/New_York", 0.14),
        ("America/Mexico_City", 0.04),
        ("America/Sao_Paulo", 0.08),
        ("Europe/London", 0.07),
        ("Europe/Berlin", 0.12),
        ("Africa/Lagos", 0.03),
        ("Europe/Moscow", 0.03),
        ("Asia/Dubai", 0.02),
        ("Asia/Kolkata", 0.10),
        ("Asia/Jakarta", 0.05),
        ("Asia/Manila", 0.03),
        ("Asia/Tokyo", 0.06),
        ("Asia/Seoul", 0.02),
        ("Australia/Sydney", 0.03),
    ),
}


@dataclass(frozen=True)
class Account:
    """The provider's limits for the model (its limits page), and the fan-out's part of them."""

    tokens_per_minute: int
    requests_per_minute: int = 0
    share: float = DEPLOYED.share


@dataclass(frozen=True)
class Workload:
    """What one plan asks and writes, and at what pace the model writes it."""

    prompt_tokens: int = field(default_factory=plan_prompt_tokens)
    max_tokens: int = estimate_max_tokens(15)
    answer_tokens: int = ANSWER_TOKENS
    profile: SpeedProfile = GPT_4O

    @property
    def cost_on_arrival(self) -> int:
        return self.prompt_tokens + self.max_tokens


@dataclass(frozen=True)
class Cohort:
    """Users queued together: ``first_slots`` are their first nudges (UTC, seconds)."""

    name: str
    queued_at: float
    first_slots: tuple[float, ...]
    day_ends_at: float


@dataclass
class CohortResult:
    name: str
    queued_at: float
    users: int
    by_model: int = 0
    fallbacks: int = 0
    ready_in_time: int = 0
    after_day_end: int = 0
    last_done: float | None = None
    ready_at: list[float] = field(default_factory=list)

    @property
    def drain_minutes(self) -> float | None:
        """Minutes from queueing to the cohort's last plan; None when it was not done."""
        if self.last_done is None or self.by_model + self.fallbacks < self.users:
            return None
        return (self.last_done - self.queued_at) / 60.0


@dataclass
class DayResult:
    cohorts: list[CohortResult]
    containers: int
    peak_containers: int = 0
    peak_in_flight: int = 0
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cut_output_tokens: int = 0
    deliveries: int = 0
    lambda_gb_s: float = 0.0
    peak_plans_per_s: int = 0

    @property
    def users(self) -> int:
        return sum(c.users for c in self.cohorts)

    @property
    def by_model(self) -> int:
        return sum(c.by_model for c in self.cohorts)

    @property
    def fallbacks(self) -> int:
        return sum(c.fallbacks for c in self.cohorts)

    @property
    def ready_in_time(self) -> int:
        return sum(c.ready_in_time for c in self.cohorts)

    @property
    def undone(self) -> int:
        return self.users - self.by_model - self.fallbacks

    def tokens_usd(self, *, batch: bool = False) -> float:
        usage = Usage(prompt_tokens=self.input_tokens, completion_tokens=self.output_tokens)
        return cost_usd(MODEL, usage, "batch" if batch else "standard") or 0.0

    @property
    def lambda_usd(self) -> float:
        return self.lambda_gb_s * LAMBDA_USD_PER_GB_S

    @property
    def peak_wcu_per_s(self) -> int:
        return self.peak_plans_per_s * WCU_PER_PLAN


@dataclass
class _Message:
    id: int
    user: int
    cohort: int
    receives: int = 0


@dataclass
class _Container:
    budget: RateBudget | None
    speeds: ModelSpeeds = field(default_factory=ModelSpeeds)
    expected_tokens: int | None = None


class _Day:
    """The event loop: the clock jumps to the next poll; everything between is computed."""

    def __init__(
        self,
        cohorts: Sequence[Cohort],
        account: Account,
        workload: Workload,
        deployed: Deployed,
        containers: int,
        seed: int,
    ) -> None:
        self.now = 0.0
        self.cohorts = cohorts
        self.workload = workload
        self.deployed = deployed
        self.rng = random.Random(seed)
        self.results = [CohortResult(c.name, c.queued_at, len(c.first_slots)) for c in cohorts]
        self.result = DayResult(self.results, containers)
        self.containers = [_Container(self._budget(account, containers)) for _ in range(containers)]
        self.visible: list[tuple[float, int, int]] = []  # (visible at, sequence, message)
        self.messages: list[_Message] = []
        self.polls: list[tuple[float, int, int]] = []  # (at, sequence, container)
        self.sequence = 0
        self.in_flight: Counter[int] = Counter()  # plans generating: +1 at a start, -1 at an end (by second)
        self.invoking: Counter[int] = Counter()  # containers in an invocation, the same way
        self.stored: Counter[int] = Counter()

    def _budget(self, account: Account, containers: int) -> RateBudget | None:
        share = RateShare.of_account(
            account.requests_per_minute, account.tokens_per_minute, share=account.share, containers=containers
        )
        if share is None:
            return None
        return RateBudget(share, clock=lambda: self.now)

    def run(self, horizon_s: float) -> DayResult:
        arrivals = sorted(range(len(self.cohorts)), key=lambda index: self.cohorts[index].queued_at)
        next_arrival = 0
        start = min((cohort.queued_at for cohort in self.cohorts), default=0.0)
        for index in range(len(self.containers)):
            self._poll_at(start, index)
        while self.polls:
            at, _, index = heapq.heappop(self.polls)
            while next_arrival < len(arrivals) and self.cohorts[arrivals[next_arrival]].queued_at <= at:
                self._queue(arrivals[next_arrival])
                next_arrival += 1
            if at > horizon_s:
                break
            self.now = at
            container = self.containers[index]
            batch = self._receive()
            if batch:
                self._invoke(index, container, batch)
                continue
            wake = [self.visible[0][0]] if self.visible else []
            if next_arrival < len(arrivals):
                wake.append(self.cohorts[arrivals[next_arrival]].queued_at)
            if wake:
                self._poll_at(max(min(wake), at + 1.0), index)
        self.result.peak_in_flight = max(_peaks(self.in_flight), default=0)
        self.result.peak_containers = max(_peaks(self.invoking), default=0)
        self.result.peak_plans_per_s = max(self.stored.values(), default=0)
        return self.result

    def _queue(self, cohort_index: int) -> None:
        cohort = self.cohorts[cohort_index]
        for user in range(len(cohort.first_slots)):
            self.messages.append(_Message(len(self.messages), user, cohort_index))
            self._push(cohort.queued_at, len(self.messages) - 1)

    def _push(self, visible_at: float, message: int) -> None:
        self.sequence += 1
        heapq.heappush(self.visible, (visible_at, self.sequence, message))

    def _poll_at(self, at: float, index: int) -> None:
        self.sequence += 1
        heapq.heappush(self.polls, (at, self.sequence, index))

    def _receive(self) -> list[_Message]:
        batch: list[_Message] = []
        while self.visible and self.visible[0][0] <= self.now and len(batch) < self.deployed.batch_size:
            batch.append(self.messages[heapq.heappop(self.visible)[2]])
        return batch

    def _invoke(self, index: int, container: _Container, batch: list[_Message]) -> None:
        """One invocation: every user of the batch at once, within the function's timeout."""
        deadline = self.now + self.deployed.invocation_s - 3.0  # Deadline.from_lambda_context's margin
        ends = [self.now + 0.05]
        for message in batch:
            message.receives += 1
            self.result.deliveries += 1
            ends.append(self._serve(container, message, deadline))
        end = max(ends)
        self.result.lambda_gb_s += (end - self.now) * self.deployed.memory_mb / 1024.0
        self.invoking[int(self.now)] += 1
        self.invoking[int(end)] -= 1
        self._poll_at(end, index)

    def _serve(self, container: _Container, message: _Message, deadline: float) -> float:
        """One user's run; returns when it ended (stored, or deferred)."""
        work = self.workload
        last = message.receives >= self.deployed.max_receives
        left = deadline - self.now - DEADLINE_SLACK_S
        speed = container.speeds.estimate(MODEL, DEFAULT_PRIOR)
        plan = plan_attempt(
            speed, max_tokens=work.max_tokens, seconds_left=left, expected_tokens=container.expected_tokens
        )
        if plan.max_tokens is None:
            return self._not_made(message, "deadline", None, last)
        wait = 0.0
        if container.budget is not None:
            reservation = container.budget.reserve(work.prompt_tokens + plan.max_tokens)
            wait = reservation.wait_s
            if wait > 0 and wait > left - plan.seconds:
                reservation.cancel()
                return self._not_made(message, "rate_limit", wait, last)
        start = self.now + wait
        first, rate = work.profile.draw(self.rng)
        tokens = min(work.answer_tokens, plan.max_tokens)
        done = start + first + tokens / rate
        self.result.requests += 1
        self.result.input_tokens += work.prompt_tokens
        if done > deadline:  # the deadline cuts the stream: billed for what it wrote
            written = max(0, int((deadline - start - first) * rate))
            self.result.output_tokens += written
            self.result.cut_output_tokens += written
            self._running(start, deadline)
            self.now, at = deadline, self.now
            ended = self._not_made(message, "deadline", None, last)
            self.now = at
            return ended
        self.result.output_tokens += tokens
        container.speeds.record(MODEL, ResponseTiming(first, done - start), tokens)
        container.expected_tokens = tokens
        self._running(start, done)
        self._stored(message, done, by_model=True)
        return done

    def _not_made(self, message: _Message, reason: str, retry_after_s: float | None, last: bool) -> float:
        if last:
            self._stored(message, self.now, by_model=False)
        else:
            self._push(self.now + deferral_s(reason, retry_after_s, message.receives), message.id)
        return self.now

    def _stored(self, message: _Message, at: float, *, by_model: bool) -> None:
        cohort = self.cohorts[message.cohort]
        result = self.results[message.cohort]
        if by_model:
            result.by_model += 1
        else:
            result.fallbacks += 1
        if at <= cohort.first_slots[message.user]:
            result.ready_in_time += 1
        if at > cohort.day_ends_at:
            result.after_day_end += 1
        result.last_done = at if result.last_done is None else max(result.last_done, at)
        result.ready_at.append(at)
        self.stored[int(at)] += 1

    def _running(self, start: float, end: float) -> None:
        self.in_flight[int(start)] += 1
        self.in_flight[int(end)] -= 1


def _peaks(changes: Counter[int]) -> Iterable[int]:
    running = 0
    for second in sorted(changes):
        running += changes[second]
        yield running


def simulate(
    cohorts: Sequence[Cohort],
    account: Account,
    *,
    workload: Workload | None = None,
    deployed: Deployed = DEPLOYED,
    containers: int | None = None,
    seed: int = 7,
    horizon_s: float = 4 * 86_400.0,
) -> DayResult:
    """Run the fan-out for ``cohorts`` (times in seconds on one clock) until the queue is empty
    or ``horizon_s``; ``containers`` defaults to what ``fanout_plan`` derives for the account."""
    work = workload or Workload()
    if containers is None:
        containers = plan_fanout(
            tokens_per_minute=account.tokens_per_minute,
            requests_per_minute=account.requests_per_minute,
            share=account.share,
            prompt_tokens=work.prompt_tokens,
            max_tokens=work.max_tokens,
            answer_tokens=work.answer_tokens,
        ).concurrency
    return _Day(cohorts, account, work, deployed, containers, seed).run(horizon_s)


# -- a day's cohorts ---------------------------------------------------------------------------------


def _first_slot_minutes(problems: Iterable[str]) -> int:
    table = build_slot_table(tuple(problems), DEFAULT_SCHEDULE_MAP)
    return min(parse_local_time(slot.local_time) for slot in table)


# Users have one to three problems of the default schedule map, all combinations alike.
_PROBLEM_SETS = [combo for size in (1, 2, 3) for combo in combinations(sorted(DEFAULT_SCHEDULE_MAP), size)]
_FIRST_SLOTS = [_first_slot_minutes(problems) for problems in _PROBLEM_SETS]


def day_cohorts(
    users: int,
    mix: Sequence[tuple[str, float]],
    local_date: date,
    *,
    generation_hour: int = DEPLOYED.generation_hour,
    plans_per_minute: float | None = None,
    seed: int = 7,
) -> list[Cohort]:
    """The cohorts the hourly scheduler (``nudges.scheduling``, run at minute 5 of every hour)
    queues for ``local_date``: at each zone's generation hour, or, given the fan-out's
    ``plans_per_minute``, at the start it plans; times in seconds after that date's UTC midnight."""
    rng = random.Random(seed)
    total = sum(weight for _, weight in mix)
    counts = {zone: round(users * weight / total) for zone, weight in mix}
    origin = datetime.combine(local_date, time(), UTC)
    queued_at = _scheduled(counts, local_date, generation_hour, plans_per_minute)
    cohorts = []
    for zone, count in counts.items():
        queued = queued_at[zone]
        tz = zone_named(zone)
        midnight = datetime.combine(local_date, time(), tz)
        firsts = tuple(
            ((midnight + timedelta(minutes=rng.choice(_FIRST_SLOTS))).astimezone(UTC) - origin).total_seconds()
            for _ in range(count)
        )
        day_end = (
            datetime.combine(local_date + timedelta(days=1), time(), tz).astimezone(UTC) - origin
        ).total_seconds()
        cohorts.append(Cohort(zone, (queued - origin).total_seconds(), firsts, day_end))
    return cohorts


class _Population:
    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def count_in_timezone(self, timezone: str) -> int:
        return self.counts.get(timezone, 0)

    def pages_in_timezone(self, timezone: str) -> Iterator[list[dict[str, Any]]]:
        yield [{"userId": "-"}]  # the queue below counts cohorts, not messages


class _Sent:
    def send(self, jobs: list[dict[str, str]]) -> int:
        return len(jobs)


def _scheduled(
    counts: dict[str, int], local_date: date, generation_hour: int, plans_per_minute: float | None
) -> dict[str, datetime]:
    """When the product's scheduler, run every hour at minute 5, queues each zone for ``local_date``."""
    scheduler = NudgeScheduler(
        users=_Population(counts),
        queue=_Sent(),
        marks=MemoryCohortMarks(),
        generation_hour=generation_hour,
        catch_up_hours=1,
        plans_per_minute=plans_per_minute,
        first_slot_minutes=first_slot_minutes(DEFAULT_SCHEDULE_MAP),
        zones=list(counts),
    )
    queued: dict[str, datetime] = {}
    run = datetime.combine(local_date - timedelta(days=2), time(), UTC).replace(minute=5)
    for _ in range(96):
        for cohort in scheduler.run(run).cohorts:
            if cohort.local_date == local_date.isoformat():
                queued.setdefault(cohort.zone, run)
        run += timedelta(hours=1)
    missing = set(counts) - set(queued)
    if missing:
        raise ValueError(f"never queued for {local_date}: {', '.join(sorted(missing))}")
    return queued


def scheduler_rate(account: Account, max_slots: int = 15) -> float | None:
    """The plans a minute the scheduler plans with for ``account`` (its settings' reading)."""
    return fanout_plans_per_minute(
        account.requests_per_minute, account.tokens_per_minute, share=account.share, max_slots=max_slots
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--mix", choices=sorted(MIXES), default="japan")
    parser.add_argument("--tokens-per-minute", type=int, default=2_000_000)
    parser.add_argument("--requests-per-minute", type=int, default=10_000)
    parser.add_argument("--share", type=float, default=DEPLOYED.share)
    parser.add_argument("--containers", type=int, default=None, help="NudgeGeneratorConcurrency (default: derived)")
    parser.add_argument("--date", type=date.fromisoformat, default=date(2026, 11, 26))
    parser.add_argument(
        "--at-generation-hour", action="store_true", help="queue every zone at its hour (the limits not known)"
    )
    args = parser.parse_args(argv)
    if args.users <= 0 or not 0 < args.share <= 1:
        parser.error("--users must be positive and --share in (0, 1]")
    if args.tokens_per_minute <= 0 and args.requests_per_minute <= 0:
        parser.error("give the account's tokens or requests per minute")
    account = Account(args.tokens_per_minute, args.requests_per_minute, args.share)
    rate = None if args.at_generation_hour else scheduler_rate(account)
    cohorts = day_cohorts(args.users, MIXES[args.mix], args.date, plans_per_minute=rate)
    day = simulate(cohorts, account, containers=args.containers)
    for line in describe(day):
        print(line)
    return 0


def describe(day: DayResult) -> list[str]:
    lines = [
        "| cohort | users | queued (UTC) | minutes to the last plan | by the model | ready by the first slot |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for cohort in day.cohorts:
        drain = cohort.drain_minutes
        lines.append(
            f"| {cohort.name} | {cohort.users:,} | {_clock(cohort.queued_at)} | "
            f"{'not done' if drain is None else f'{drain:,.0f}'} | {_share(cohort.by_model, cohort.users)} | "
            f"{_share(cohort.ready_in_time, cohort.users)} |"
        )
    lines.append(
        f"containers {day.containers} (peak {day.peak_containers}), plans in flight at peak {day.peak_in_flight}, "
        f"tokens {day.input_tokens:,} in / {day.output_tokens:,} out: ${day.tokens_usd():,.0f} synchronous, "
        f"${day.tokens_usd(batch=True):,.0f} through the Batch API; Lambda ${day.lambda_usd:,.2f}; "
        f"DynamoDB peak {day.peak_wcu_per_s:,} write units/s of {DYNAMODB_TABLE_WCU_PER_S:,}"
    )
    return lines


def _clock(seconds: float) -> str:
    moment = datetime(2000, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)
    days = math.floor(seconds / 86_400)
    return f"{'D' if days == 0 else f'D{days:+d}'} {moment:%H:%M}"


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "-"


if __name__ == "__main__":
    raise SystemExit(main())
