"""Time to first words: a chat answer's words on its user's WebSocket as the model writes them,
in real seconds, at a real model's pace, next to the same answers read by REST without a socket.

Each answer in a process of its own (``benchmarks/socket_speed/user.py``): the local runner with
the WebSocket API, the real openai client, the fake server streaming ~1,000 tokens at the
profile's pace (gpt-4o: 60 tokens/s; a slow hour: 20 tokens/s; a reasoning model: its first token
after 25 s), each after a short warm-up answer by the same path. The users of a row start together
once every process is set up. Paths: ``rest`` (the
message route, answered in the request when the answer fits, else handed to the worker), ``rest-202``
(``Prefer: respond-async``: always the worker), ``socket`` (``sendMessage``: always the worker) and the
baseline, ``rest`` without a socket (the whole answer is the first thing the user sees).

How it works, and why: benchmarks/README.md (section ``socket_bench``).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.command_line import benchmark_arguments

ROOT = Path(__file__).resolve().parent.parent
PROFILES = {"gpt-4o": "60 tokens/s", "slow-hour": "20 tokens/s", "reasoning": "first token after 25 s"}
PATHS = {"rest": "REST", "rest-202": "REST 202", "socket": "socket", "baseline": "REST, no socket (baseline)"}
ANSWERS = {"gpt-4o": 5, "slow-hour": 10, "reasoning": 5}
# What an operator sets for a reasoning model: its long first token, planned with.
PROFILE_ENV = {"reasoning": {"OPENAI_FIRST_TOKEN_SECONDS": "25"}}
QUICK = ("gpt-4o", 2, ("rest", "socket", "baseline"))
USER_TIMEOUT_S = 900
# API Gateway WebSocket list prices (us-east-1): messages are metered in 32 KB increments.
MESSAGE_USD_PER_MILLION = 1.00
CONNECTION_MINUTE_USD_PER_MILLION = 0.25
METERED_BYTES = 32 * 1024


@dataclass
class Row:
    profile: str
    path: str
    outcomes: list[dict[str, Any]]

    def values(self, key: str) -> list[float]:
        return sorted(float(o[key]) for o in self.outcomes if o.get(key) is not None)

    def between(self, later: str, earlier: str) -> list[float]:
        """The answers' times from one mark to a later one, where both were seen."""
        return sorted(
            float(o[later]) - float(o[earlier]) for o in self.outcomes if None not in (o.get(later), o.get(earlier))
        )

    def failed(self) -> int:
        return sum(1 for o in self.outcomes if "error" in o)


Cells = Callable[[Row, list[dict[str, Any]]], list[str]]  # a row's cells, from it and its answers that did not fail


def percentile(values: list[float], share: float) -> float:
    if not values:
        return math.nan
    return values[min(len(values) - 1, max(0, math.ceil(share * len(values)) - 1))]


def pair(values: list[float]) -> str:
    return "-" if not values else f"{percentile(values, 0.5):.2f} s / {percentile(values, 0.95):.2f} s"


def start_user(path: str, profile: str, seed: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'layers/common/python'}:{ROOT}", **PROFILE_ENV.get(profile, {})}
    return subprocess.Popen(
        [sys.executable, "-m", "benchmarks.socket_speed.user", path, profile, str(seed)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def measure(profile: str, jobs: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """Every job's process started, all of them told to go once every one is ready, their lines read."""
    users = [(path, start_user(path, profile, seed)) for path, seed in jobs]
    for _, user in users:
        assert user.stdout is not None
        user.stdout.readline()  # ready (or nothing: it failed, and its result says so)
    for _, user in users:
        assert user.stdin is not None
        try:
            user.stdin.write("go\n")
            user.stdin.flush()
        except BrokenPipeError:
            pass
    results = []
    for path, user in users:
        try:
            out, _ = user.communicate(timeout=USER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            user.kill()
            out = ""
        lines = [line for line in out.splitlines() if line.startswith("{")]
        results.append(json.loads(lines[-1]) if lines else {"path": path, "error": f"exit {user.returncode}"})
    return results


def rows_of(profile: str, paths: tuple[str, ...], answers: int, *, together: bool = False) -> list[Row]:
    """A row per path: one after another, or (``together``: the quick mode) all paths' answers at once."""
    started = time.monotonic()
    if together:
        outcomes = measure(profile, [(path, seed) for path in paths for seed in range(answers)])
        rows = [Row(profile, path, [o for o in outcomes if o.get("path") == path]) for path in paths]
    else:
        rows = [Row(profile, path, measure(profile, [(path, seed) for seed in range(answers)])) for path in paths]
    print(f"[socket] {profile}: {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return rows


def answers_table(rows: list[Row], paths: dict[str, str], columns: str, cells: Cells) -> str:
    """A line per row: its model, path and answers (failed ones said), then ``columns`` (joined by " | ")."""
    lines = [f"| model | path | answers | {columns} |", "|" + " --- |" * (3 + len(columns.split(" | ")))]
    for row in rows:
        ok = [o for o in row.outcomes if "error" not in o]
        answers = f"{len(ok)} ({row.failed()} failed)" if row.failed() else str(len(ok))
        lines.append(f"| {' | '.join([PROFILES[row.profile], paths[row.path], answers, *cells(row, ok)])} |")
    return "\n".join(lines)


def speed_cells(row: Row, ok: list[dict[str, Any]]) -> list[str]:
    share = [o["first_words_s"] / o["whole_s"] for o in ok if o.get("first_words_s") and o.get("whole_s")]
    frames = row.values("frames")
    socket = row.path != "baseline"
    return [
        str(sum(1 for o in ok if o.get("handed_over"))),
        pair(row.values("model_call_s")),
        pair(row.values("first_words_s")) if socket else "-",
        pair(row.between("first_words_s", "first_token_s")) if socket else "-",
        pair(row.values("whole_s")),
        f"{max(share):.1%}" if share else "-",
        f"{sum(frames) / len(frames):.0f}" if frames else "-",
        f"{sum(1 for o in ok if o.get('equal'))}/{len(ok)}" if socket else "-",
    ]


SPEED_COLUMNS = (
    "handed to the worker | send -> model's call p50 / p95 | send -> first words p50 / p95 "
    "| model's first token -> first words p50 / p95 | send -> whole answer p50 / p95 "
    "| first words / whole time (max) | frames per answer | deltas joined = stored"
)


def cost_table(rows: list[Row]) -> str:
    lines = [
        "| model | path | messages / answer (32 KB units) | socket: messages $ / 1,000 answers | connection minutes "
        "/ 1,000 answers | socket: minutes $ / 1,000 answers | model $ / 1,000 answers |",
        "|" + " --- |" * 7,
    ]
    for row in rows:
        ok = [o for o in row.outcomes if "error" not in o and o.get("frame_bytes") is not None]
        if not ok:
            continue
        inbound = 1 if row.path == "socket" else 0  # the client's sendMessage is billed too
        messages = [inbound + sum(math.ceil(size / METERED_BYTES) for size in o["frame_bytes"]) for o in ok]
        minutes = [math.ceil(float(o["whole_s"]) / 60) for o in ok]  # the connection, billed by the started minute
        per_answer = sum(messages) / len(ok)
        minutes_per_answer = sum(minutes) / len(ok)
        model = sum(float(o["model_cost_usd"]) for o in ok) / len(ok)
        lines.append(
            f"| {PROFILES[row.profile]} | {PATHS[row.path]} | {per_answer:.0f} "
            f"| ${per_answer * 1000 * MESSAGE_USD_PER_MILLION / 1e6:.4f} | {minutes_per_answer * 1000:,.0f} "
            f"| ${minutes_per_answer * 1000 * CONNECTION_MINUTE_USD_PER_MILLION / 1e6:.5f} | ${model * 1000:.2f} |"
        )
    return "\n".join(lines)


def main(quick: bool = False) -> None:
    rows: list[Row] = []
    if quick:
        profile, answers, paths = QUICK
        rows += rows_of(profile, paths, answers, together=True)
        print(f"Quick mode: {PROFILES[profile]} only, {answers} answers a path, every path's at once; the full")
        print(f"run: every model, {ANSWERS['slow-hour']} answers at 20 tokens/s, REST 202 too, a path at a time.\n")
    else:
        for profile in PROFILES:
            rows += rows_of(profile, tuple(PATHS), ANSWERS[profile])
    print("Each answer in a process of its own through the local runner: ~1,000 tokens streamed by the fake")
    print("server at the model's pace in real seconds, its words pushed to the user's socket as written, after")
    print("a short first answer by the same path (the functions warm, the model's pace met, as in a running")
    print("service). The queues are delivered every 0.1 s, as Lambda's poller takes a message as soon as sent.\n")
    print(answers_table(rows, PATHS, SPEED_COLUMNS, speed_cells))
    print("\nfirst words: the first delta on the socket; whole answer: `done` on the socket, or for the baseline")
    print("the REST answer (a 202 polled at its Retry-After). The model's first token: when the fake server")
    print("sent it, on the same clock.\n")
    print(cost_table(rows))
    print(f"\nAPI Gateway WebSocket list prices: ${MESSAGE_USD_PER_MILLION:.2f} per million messages (32 KB units,")
    print(f"both ways), ${CONNECTION_MINUTE_USD_PER_MILLION:.2f} per million connection minutes (counted here as the")
    print("answer's started minutes); the model at llm/prices.py's list price for what the fake server billed.")


def main_quick() -> None:
    main(quick=True)


if __name__ == "__main__":
    arguments = benchmark_arguments(
        __file__, __doc__, quick="60 tokens/s only, 2 answers a path, no REST 202 row (QUICK)"
    )
    main(quick=arguments.quick)
