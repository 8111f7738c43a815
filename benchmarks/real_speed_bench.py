"""The product at a real model's speed, in real seconds, per speed profile.

How it runs, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.command_line import benchmark_arguments

ROOT = Path(__file__).resolve().parent.parent
USERS = {"chat": 3, "interview": 3, "generator": 1}
PROFILES = ["instant", "gpt-4o", "slow-hour", "reasoning"]
BASELINE_PROFILES = {"gpt-4o", "slow-hour"}
# What an operator sets for a reasoning model: its long first token, planned with and waited for
# (three times it: 75 s before a first token is late).
PROFILE_ENV = {"reasoning": {"OPENAI_FIRST_TOKEN_SECONDS": "25"}}
# The code as it ran before: no streaming, no hand-over, one user at a time, a 25 s first-token bound.
BASELINE_ENV = {
    "OPENAI_STREAM": "false",
    "BENCH_NO_HANDOVER": "1",
    "NUDGE_BATCH_CONCURRENCY": "1",
    "OPENAI_FIRST_TOKEN_TIMEOUT_SECONDS": "25",
}
USER_TIMEOUT_S = 900
# The product without the check of a streamed answer's pace against its plan (what it saves shows
# where the plan is wrong: a slow hour met by a container that has not learned it yet).
NO_PACE_CHECK_ENV = {"BENCH_NO_PACE_CHECK": "1"}
NO_PACE_CHECK_SIDES = {("slow-hour", "chat")}
# The quick mode: one route at one profile, its baseline beside it, 2 users a side (about a minute on 2 cores).
QUICK = ("gpt-4o", {"chat": 2})


@dataclass
class Row:
    profile: str
    side: str
    workload: str
    outcomes: list[dict[str, Any]]
    calls: int
    billed_completion: int
    billed_prompt: int
    abandoned: int

    @property
    def users(self) -> int:
        return len(self.outcomes)

    @property
    def by_model(self) -> int:
        return sum(1 for outcome in self.outcomes if outcome.get("by_model"))

    @property
    def fallbacks(self) -> int:
        return sum(1 for outcome in self.outcomes if outcome.get("fallback"))

    @property
    def gateway_timeouts(self) -> int:
        return sum(1 for outcome in self.outcomes if 504 in (outcome.get("status"), outcome.get("final")))

    def waited(self, percentile: float) -> float:
        waits = sorted(float(outcome.get("wait_s", 0.0)) for outcome in self.outcomes)
        if not waits:
            return 0.0
        index = min(len(waits) - 1, max(0, round(percentile * (len(waits) - 1))))
        return waits[index]

    def per_success(self, value: int) -> str:
        return f"{value / self.by_model:,.0f}" if self.by_model else "-"


def run_user(workload: str, profile: str, seed: int, extra_env: dict[str, str]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'layers/common/python'}:{ROOT}", **extra_env}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.real_speed.user", workload, profile, str(seed)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=USER_TIMEOUT_S,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = done.stderr.strip().splitlines()[-3:]
        return {"error": f"exit {done.returncode}: {' | '.join(tail)}", "wait_s": time.monotonic() - started}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def measure(profile: str, side: str, workloads: dict[str, int] | None = None) -> list[Row]:
    side_env = {"baseline": BASELINE_ENV, "no pace check": NO_PACE_CHECK_ENV}.get(side, {})
    extra = {**PROFILE_ENV.get(profile, {}), **side_env}
    workloads = workloads or USERS
    jobs = [(workload, seed) for workload, users in workloads.items() for seed in range(users)]
    with ThreadPoolExecutor(len(jobs)) as pool:
        results = list(pool.map(lambda job: (job[0], run_user(job[0], profile, job[1], extra)), jobs))
    rows = []
    for workload in workloads:
        mine = [result for name, result in results if name == workload]
        outcomes: list[dict[str, Any]] = []
        for result in mine:
            if "error" in result:
                outcomes.append(
                    {"by_model": False, "fallback": False, "wait_s": result["wait_s"], "outcome": result["error"]}
                )
            else:
                outcomes.extend(result.get("users", [result]))
        rows.append(
            Row(
                profile,
                side,
                workload,
                outcomes,
                sum(int(result.get("calls", 0)) for result in mine),
                sum(int(result.get("billed_completion", 0)) for result in mine),
                sum(int(result.get("billed_prompt", 0)) for result in mine),
                sum(int(result.get("abandoned", 0)) for result in mine),
            )
        )
    return rows


def table(rows: list[Row]) -> str:
    header = (
        "| profile | side | route | by the model | fallbacks | p50 / p95 wait | 504s | calls / success "
        "| billed tokens / success (completion) | abandoned calls | outcomes |"
    )
    lines = [header, "|" + " --- |" * 11]
    for row in rows:
        kinds: dict[str, int] = {}
        for outcome in row.outcomes:
            kinds[str(outcome.get("outcome"))] = kinds.get(str(outcome.get("outcome")), 0) + 1
        outcomes = ", ".join(f"{kind} x{count}" for kind, count in sorted(kinds.items()))
        calls = f"{row.calls / row.by_model:.2f}" if row.by_model else "-"
        billed = row.per_success(row.billed_prompt + row.billed_completion)
        lines.append(
            f"| {row.profile} | {row.side} | {row.workload} | {row.by_model}/{row.users} | {row.fallbacks} "
            f"| {row.waited(0.5):.1f} s / {row.waited(0.95):.1f} s | {row.gateway_timeouts} | {calls} "
            f"| {billed} ({row.per_success(row.billed_completion)}) | {row.abandoned} | {outcomes} |"
        )
    return "\n".join(lines)


def timed(profile: str, side: str, workloads: dict[str, int] | None = None) -> list[Row]:
    started = time.monotonic()
    rows = measure(profile, side, workloads)
    print(f"[real speed] {profile} / {side}: {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return rows


def main(quick: bool = False) -> None:
    rows: list[Row] = []
    if quick:
        profile, workloads = QUICK
        rows += timed(profile, "baseline", workloads)
        rows += timed(profile, "product", workloads)
        route, users = next(iter(workloads.items()))
        print(f"Quick mode: {route} at {profile}'s pace only, {users} users a side ({USERS[route]} in the full run),")
        print("the baseline beside the product. The full run (python -m benchmarks.run_all real_speed_bench):")
        print(f"profiles {', '.join(PROFILES)}; chat, interview, the generator; the slow hour without the pace check.")
    else:
        for profile in PROFILES:
            sides = ["baseline", "product"] if profile in BASELINE_PROFILES else ["product"]
            for side in sides:
                rows += timed(profile, side)
            for checked_profile, workload in sorted(NO_PACE_CHECK_SIDES):
                if checked_profile == profile:
                    rows += timed(profile, "no pace check", {workload: USERS[workload]})
    print("Each user in a process of its own through the local runner (API Gateway's 29 s and 504),")
    print("the fake server at the profile's pace in real seconds. Chat: ~1,000-token answers (3 users);")
    print("interview: a six-call turn (3 users); generator: one batch of 5 users, ~3,000-token plans.")
    print("baseline: the same code as it ran before (not streamed, no hand-over, one user at a time).")
    print("no pace check: the product, but a streamed answer in the request runs to the deadline however slow.\n")
    print(table(rows))
    print("\nwait: from sending to having the answer (for an accepted answer: polling its Location).")
    print("billed: prompt + completion tokens the provider charged per user served by the model;")
    print("an abandoned streamed call is billed what was generated before it stopped, a non-streamed one whole.")


def main_quick() -> None:
    main(quick=True)


if __name__ == "__main__":
    arguments = benchmark_arguments(__file__, __doc__, quick="chat at gpt-4o's pace only (QUICK), with its baseline")
    main(quick=arguments.quick)
