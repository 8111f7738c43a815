"""The nudge fan-out's capacity: one day for 10,000 to 1,000,000 users, simulated, and the
simulation checked against a real run.

How it runs, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path

os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Bench")
os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from benchmarks.command_line import benchmark_arguments
from devtools.fanout_plan import DEPLOYED
from devtools.fanout_sim import (
    MIXES,
    PRICES_READ_ON,
    Account,
    Cohort,
    DayResult,
    Workload,
    day_cohorts,
    scheduler_rate,
    simulate,
)

DAY = date(2026, 11, 26)  # a Thursday; Europe and the Americas on winter time
ACCOUNT = Account(tokens_per_minute=2_000_000, requests_per_minute=10_000)
LARGE_ACCOUNT = Account(tokens_per_minute=30_000_000, requests_per_minute=10_000)
POPULATIONS = (10_000, 100_000, 1_000_000)
PLOT = Path(__file__).resolve().parent / "results" / "fanout_ready.svg"
VALIDATION_USERS = 300
TOLERANCE = 0.20


@dataclass
class Scenario:
    mix: str
    users: int
    account: Account
    planned: bool
    day: DayResult | None = None
    seconds: float = 0.0

    def run(self) -> Scenario:
        started = time.perf_counter()
        rate = scheduler_rate(self.account) if self.planned else None
        cohorts = day_cohorts(self.users, MIXES[self.mix], DAY, plans_per_minute=rate)
        self.day = simulate(cohorts, self.account)
        self.seconds = time.perf_counter() - started
        return self

    def row(self) -> str:
        day = self.day
        assert day is not None
        slowest = max(day.cohorts, key=lambda c: c.drain_minutes if c.drain_minutes is not None else float("inf"))
        drain = slowest.drain_minutes
        after_day = sum(c.after_day_end for c in day.cohorts)
        return (
            f"| {self.mix} | {self.users:,} | {self.account.tokens_per_minute / 1e6:g}M | "
            f"{'planned from the limit' if self.planned else 'at 05:00'} | {day.containers} | "
            f"{slowest.name}: {'not done' if drain is None else f'{drain:,.0f}'} | "
            f"{day.ready_in_time / day.users:.0%} | {day.by_model / day.users:.0%} | {after_day / day.users:.0%} | "
            f"{day.peak_in_flight:,} | {day.input_tokens / 1e6:,.0f}M / {day.output_tokens / 1e6:,.0f}M | "
            f"${day.tokens_usd():,.0f} | ${day.tokens_usd(batch=True):,.0f} | ${day.lambda_usd:,.2f} | "
            f"{day.peak_wcu_per_s:,} |"
        )


def capacity_table() -> list[Scenario]:
    scenarios = [
        Scenario(mix, users, ACCOUNT, planned)
        for mix in ("japan", "global")
        for users in POPULATIONS
        for planned in (False, True)
    ]
    scenarios += [Scenario(mix, 1_000_000, LARGE_ACCOUNT, True) for mix in ("japan", "global")]
    print(
        f"## The fan-out's capacity, simulated: one day ({DAY.isoformat()}), gpt-4o's pace, plans of "
        f"{Workload().answer_tokens:,} tokens counted as {Workload().cost_on_arrival:,} on arrival, the "
        f"generator's {ACCOUNT.share:.0%} share of the account; prices: OpenAI's list ({PRICES_READ_ON})\n"
    )
    print(
        "| time zones | users | account (tokens/min) | cohorts start | containers | slowest cohort: minutes to its "
        "last plan | ready by the first slot | by the model | made after the day ended | plans in flight (peak) "
        "| tokens in / out | synchronous | Batch API | Lambda | DynamoDB write units/s (peak) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for scenario in scenarios:
        print(scenario.run().row(), flush=True)
    simulated = sum(s.seconds for s in scenarios)
    print(f"\n{len(scenarios)} days simulated in {simulated:.0f} s of this machine's time.\n")
    return scenarios


# -- the plot -------------------------------------------------------------------------------------


def ready_curve(day: DayResult, zone: str) -> list[float]:
    cohort = next(c for c in day.cohorts if c.name == zone)
    return sorted(cohort.ready_at)


def write_plot(curves: dict[str, list[float]], origin_s: float, marks: dict[str, float], title: str) -> None:
    """Plans ready (share of the cohort) against local time, one line per way of starting."""
    width, height, left, bottom, top, right = 720, 360, 60, 40, 40, 20
    start_h, end_h = -4.0, 12.0  # local hours around the generation day's midnight
    span = end_h - start_h

    def x(seconds: float) -> float:
        hours = (seconds - origin_s) / 3600.0
        return left + (min(max(hours, start_h), end_h) - start_h) / span * (width - left - right)

    def y(share: float) -> float:
        return height - bottom - share * (height - bottom - top)

    colours = ["#d62728", "#1f77b4"]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        f'font-size="12"><rect width="100%" height="100%" fill="white"/>',
        f'<text x="{left}" y="20" font-size="14">{title}</text>',
        f'<line x1="{left}" y1="{y(0)}" x2="{width - right}" y2="{y(0)}" stroke="black"/>',
        f'<line x1="{left}" y1="{y(0)}" x2="{left}" y2="{y(1)}" stroke="black"/>',
    ]
    for share in (0.0, 0.5, 1.0):
        parts.append(f'<text x="{left - 8}" y="{y(share) + 4}" text-anchor="end">{share:.0%}</text>')
    for hour in range(int(start_h), int(end_h) + 1, 2):
        px = x(origin_s + hour * 3600)
        label = f"{hour % 24:02d}:00"
        parts.append(f'<text x="{px}" y="{height - bottom + 16}" text-anchor="middle">{label}</text>')
    for name, at in marks.items():
        px = x(at)
        parts.append(f'<line x1="{px}" y1="{y(0)}" x2="{px}" y2="{y(1)}" stroke="#888" stroke-dasharray="4 3"/>')
        parts.append(f'<text x="{px + 4}" y="{y(1) - 4}" fill="#555">{name}</text>')
    for index, (name, times) in enumerate(curves.items()):
        step = max(1, len(times) // 400)
        points = [(times[0], 0.0), *[(t, (n + 1) / len(times)) for n, t in enumerate(times)][::step]]
        points.append((times[-1], 1.0))
        path = " ".join(f"{x(t):.1f},{y(share):.1f}" for t, share in points)
        colour = colours[index % len(colours)]
        parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        label_y = y(0.92 - 0.08 * index)
        parts.append(f'<text x="{left + 8}" y="{label_y}" fill="{colour}">{name}</text>')
    parts.append("</svg>")
    PLOT.write_text("\n".join(parts) + "\n", encoding="utf-8")


def plot(scenarios: list[Scenario]) -> None:
    by_key = {(s.mix, s.users, s.account, s.planned): s.day for s in scenarios}
    at_hour, planned = by_key[("japan", 100_000, ACCOUNT, False)], by_key[("japan", 100_000, ACCOUNT, True)]
    assert at_hour is not None and planned is not None
    origin = 15 * 3600.0  # midnight of the 26th in Tokyo (UTC+9): 15:00 UTC on the 25th
    origin_s = -86_400.0 + origin
    write_plot(
        {
            "queued at 05:00": ready_curve(at_hour, "Asia/Tokyo"),
            "start planned from the limit": ready_curve(planned, "Asia/Tokyo"),
        },
        origin_s,
        {"05:00": origin_s + 5 * 3600, "first slots from 06:00": origin_s + 6 * 3600, "08:30": origin_s + 8.5 * 3600},
        "Japan, 100,000 users, 2M tokens/min: plans ready (share of the cohort) by local time",
    )
    print(f"Plot: plans ready against time, Japan's 100,000 users both ways: {PLOT.name}\n")


# -- the simulation against a real run ---------------------------------------------------------------


@dataclass
class Check:
    name: str
    max_receives: int
    measured_minutes: float = 0.0
    measured_fallbacks: float = 0.0
    predicted_minutes: float = 0.0
    predicted_fallbacks: float = 0.0

    def row(self) -> str:
        minutes_off = abs(self.predicted_minutes - self.measured_minutes) / self.measured_minutes
        fallbacks_off = _relative(self.predicted_fallbacks, self.measured_fallbacks)
        verdict = "within" if max(minutes_off, fallbacks_off) <= TOLERANCE else "OUTSIDE"
        return (
            f"| {self.name} | {self.measured_minutes:.1f} | {self.predicted_minutes:.1f} | {minutes_off:.0%} | "
            f"{self.measured_fallbacks:.1%} | {self.predicted_fallbacks:.1%} | {fallbacks_off:.0%} | "
            f"{verdict} {TOLERANCE:.0%} |"
        )


def _relative(predicted: float, measured: float) -> float:
    if measured == 0:
        return 0.0 if predicted == 0 else float("inf")
    return abs(predicted - measured) / measured


def validate() -> None:
    from benchmarks import fanout_bench
    from devtools.time_scale import scale_product, unscale_product

    checks = [
        Check("the template's queue (5 deliveries)", DEPLOYED.max_receives),
        Check("a queue that does not redeliver (1 delivery)", 1),
    ]
    for check in checks:
        scale_product(fanout_bench.SCALE)
        side = fanout_bench.run_like_lambda(
            fanout_bench.Side(check.name, fanout_bench.SHARE, users=VALIDATION_USERS, max_receives=check.max_receives)
        )
        unscale_product()  # the simulation runs in the model's own time
        check.measured_minutes = side.minutes
        check.measured_fallbacks = side.fallbacks / VALIDATION_USERS
        account = Account(
            fanout_bench.ACCOUNT.tokens_per_minute, fanout_bench.ACCOUNT.requests_per_minute, fanout_bench.SHARE
        )
        workload = Workload(prompt_tokens=round(side.plan_cost) - DEPLOYED_MAX_TOKENS)
        predictions = [
            simulate(
                [Cohort("bench", 0.0, (float("inf"),) * VALIDATION_USERS, float("inf"))],
                account,
                workload=workload,
                deployed=replace(DEPLOYED, max_receives=check.max_receives),
                containers=fanout_bench.CONTAINERS,
                seed=seed,
            )
            for seed in range(3)
        ]
        check.predicted_minutes = statistics.mean(p.cohorts[0].drain_minutes or 0.0 for p in predictions)
        check.predicted_fallbacks = statistics.mean(p.fallbacks / VALIDATION_USERS for p in predictions)
    print(
        f"## The simulation against a run through the local runner: {VALIDATION_USERS} users, "
        f"{fanout_bench.CONTAINERS} containers, "
        f"an account of {fanout_bench.ACCOUNT.tokens_per_minute:,} tokens/min ({fanout_bench.SHARE:.0%} share), "
        "gpt-4o's pace 20x faster, minutes in the model's time\n"
    )
    print(
        "| queue | minutes to the last plan, measured | simulated | off by | fallback share, measured | simulated "
        "| off by | |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for check in checks:
        print(check.row())


DEPLOYED_MAX_TOKENS = Workload().max_tokens


def main() -> None:
    scenarios = capacity_table()
    plot(scenarios)
    validate()


if __name__ == "__main__":
    benchmark_arguments(__file__, __doc__)
    main()
