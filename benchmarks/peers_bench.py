"""Peer benchmark: the nudge Commander task through this product's engine, Instructor and
Pydantic AI against seeded fault mixes, and the judge's messy-answer corpus through each side's
JSON-from-text extraction. Prints the tables and writes them to ``benchmarks/results/peers.md``.

How it runs, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lambda_agents.llm import (
    CONTAINER_BUDGETS,
    GrowingTokenPolicy,
    StructuredOptions,
    StructuredOutputError,
    generate_structured,
)
from lambda_agents.llm.openai_model import OpenAIChatModel, OpenAIModelSettings
from lambda_agents.llm.policy import StreamTimeouts
from lambda_agents.llm.speeds import SpeedEstimate
from lambda_agents.nudges.commander import Grounding, build_messages, run_commander
from lambda_agents.nudges.schema import create_agent_output_model
from lambda_agents.nudges.slots import Slot
from lambda_agents.nudges.tokens import estimate_max_tokens
from lambda_agents.observability import logger

from benchmarks.command_line import benchmark_arguments
from benchmarks.peers.accounting import ClassRow, SideRow, UserOutcome, by_fault_class, summarise
from benchmarks.peers.commander_task import SLOT_COUNT
from benchmarks.peers.fault_mix import (
    DEFAULT_CAP,
    RETRY_AFTER_S,
    SLOW_S,
    USER_MARKER,
    AnswerSizes,
    Bill,
    FaultMixServer,
    FaultPlan,
    FaultRates,
)
from benchmarks.peers.messy_answers import CASES, measure, naive_first_last_brace

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PEERS = HERE / "peers"
VENVS = HERE / ".venvs"
RESULTS = HERE / "results" / "peers.md"
UV = ROOT / ".tools" / "venv" / "bin" / "uv"
CONCURRENCY = 8
MODEL = "gpt-4o-2024-08-06"
# The product's first-token timeout, scaled to the fake's 1.5 s "slow" answer as 30 s is to a real one.
PRODUCT_TIMEOUT_S = 1.0
# The fault mix's server answers at once (its "slow" faults are stalls): the engine plans with that.
INSTANT_FAKE = SpeedEstimate(first_token_s=0.05, tokens_per_s=10_000.0)
PEER_TIMEOUT_S = 240.0  # bound on a whole peer subprocess (the openai default per request is 600 s)
STARTED = time.perf_counter()


@dataclass(frozen=True)
class Run:
    key: str
    title: str
    seed: int
    users: int
    start: int
    rates: FaultRates = field(default_factory=FaultRates)
    sizes: AnswerSizes = field(default_factory=AnswerSizes)

    def plans(self) -> dict[int, FaultPlan]:
        return {n: FaultPlan.for_user(self.seed, n, self.rates, self.sizes) for n in range(1, self.users + 1)}


RAMP_START = Run("ramp", "ramp start: max_tokens from the Commander's estimate", seed=7, users=40, start=4095)
SAME_START = Run(
    "same",
    "same start: every side at max_tokens=1,000, a third of the users need about 3x",
    seed=11,
    users=200,
    start=1000,
    rates=FaultRates(verbose=1 / 3, slow=0.0),
    sizes=AnswerSizes(compact=(600, 950), verbose=(2700, 3300)),
)


def progress(message: str) -> None:
    print(f"[peers_bench {time.perf_counter() - STARTED:6.1f} s] {message}", file=sys.stderr, flush=True)


class Counter:
    """Thread-safe users-done counter that reports every ``every`` users and at the end."""

    def __init__(self, label: str, total: int, every: int = 50) -> None:
        self.label, self.total, self.every = label, total, every
        self.done = 0
        self._lock = threading.Lock()

    def tick(self) -> None:
        with self._lock:
            self.done += 1
            done = self.done
        if done % self.every == 0 or done == self.total:
            progress(f"{self.label}: {done}/{self.total} users")


@dataclass(frozen=True)
class Peer:
    name: str
    script: str
    requirements: tuple[str, ...]


PEER_SPECS = (
    Peer("instructor", "run_instructor.py", ("instructor>=1.17,<1.18",)),
    Peer("pydantic_ai", "run_pydantic_ai.py", ("pydantic-ai-slim[openai]>=2.68,<2.69",)),
)


def peer_python(peer: Peer) -> Path:
    """The peer's interpreter, creating its venv once (skipped when the marker is there)."""
    venv = VENVS / peer.name
    python = venv / "bin" / "python"
    marker = venv / ".bench-installed"
    wanted = "\n".join(peer.requirements)
    if marker.exists() and marker.read_text(encoding="utf-8") == wanted:
        return python
    progress(f"creating the {peer.name} venv under {venv.relative_to(ROOT)} (once; later runs reuse it)")
    started = time.perf_counter()
    for command in (
        [str(UV), "venv", "--quiet", "--allow-existing", "-p", sys.executable, str(venv)],
        [str(UV), "pip", "install", "--quiet", "-p", str(python), *peer.requirements],
    ):
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"setting up the {peer.name} venv failed: {done.stderr[-2000:]}")
    marker.write_text(wanted, encoding="utf-8")
    progress(f"created the {peer.name} venv in {time.perf_counter() - started:.1f} s")
    return python


def run_peer(peer: Peer, job: dict[str, Any]) -> dict[str, Any]:
    """Runs a peer script on ``job``; its progress lines (stderr) are echoed as they come."""
    python = peer_python(peer)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "PYTHONPATH"))}
    env["OPENAI_API_KEY"] = "bench"  # never a real key: the base_url is the local fault server
    process = subprocess.Popen(
        [str(python), str(PEERS / peer.script)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=PEERS,
    )
    errors: list[str] = []

    def echo() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            if line.startswith("progress "):
                progress(f"{peer.name}: {line.removeprefix('progress ').strip()}")
            else:
                errors.append(line)

    reader = threading.Thread(target=echo, daemon=True)
    reader.start()
    watchdog = threading.Timer(PEER_TIMEOUT_S, process.kill)
    watchdog.start()
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(job))
        process.stdin.close()
        out = process.stdout.read()
        process.wait()
    finally:
        watchdog.cancel()
    reader.join(timeout=5)
    if process.returncode != 0:
        raise RuntimeError(f"{peer.name} failed ({process.returncode}): {''.join(errors)[-2000:]}")
    return json.loads(out)  # type: ignore[no-any-return]


# --- the Commander task -------------------------------------------------------------------------

SLOT_TIMES = tuple(f"{6 + index // 2:02d}:{30 * (index % 2):02d}" for index in range(SLOT_COUNT))


def grounding_for(user_number: int) -> Grounding:
    """The same prompt for every side; the fault server finds the user in ``appVersion``."""
    return Grounding(
        user_id=f"{USER_MARKER}{user_number:03d}",
        problems=("phone_addiction", "staying_up_late"),
        language="en",
        app_version=f"2.4.0 ({USER_MARKER}{user_number:03d})",
        local_date="2026-11-22",
        timezone="Asia/Tokyo",
        slot_table=tuple(Slot(index, time, ("phone_addiction",)) for index, time in enumerate(SLOT_TIMES)),
    )


Side = Callable[[str, list[int]], tuple[list[UserOutcome], float]]


def product_side(label: str, one: Callable[[OpenAIChatModel, int], UserOutcome]) -> Side:
    """An in-process product side: a fresh container's token memory, 8 users at a time."""

    def side(base_url: str, users: list[int]) -> tuple[list[UserOutcome], float]:
        model = OpenAIChatModel(
            OpenAIModelSettings(
                api_key="bench",
                model=MODEL,
                base_url=base_url,
                timeouts=StreamTimeouts(first_token_s=PRODUCT_TIMEOUT_S, stall_s=PRODUCT_TIMEOUT_S),
                speed_prior=INSTANT_FAKE,
            )
        )
        CONTAINER_BUDGETS.clear()
        counter = Counter(label, len(users))

        def counted(number: int) -> UserOutcome:
            outcome = one(model, number)
            counter.tick()
            return outcome

        level = logger.log_level
        logger.setLevel("WARNING")  # one INFO line per attempt would bury the table
        started = time.perf_counter()
        try:
            with ThreadPoolExecutor(CONCURRENCY) as pool:
                outcomes = list(pool.map(counted, users))
        finally:
            logger.setLevel(level)
        return outcomes, time.perf_counter() - started

    return side


def commander_user(token_policy: GrowingTokenPolicy | None) -> Callable[[OpenAIChatModel, int], UserOutcome]:
    """The product's Commander (its own retry policy, then the rule-based fallback)."""

    def one(model: OpenAIChatModel, number: int) -> UserOutcome:
        result = run_commander(model, grounding_for(number), token_policy=token_policy)
        if result.fallback_used:
            return UserOutcome(number, None, result.fallback_reason)
        return UserOutcome(
            number, result.output.model_dump(by_alias=True, mode="json"), None, result.usage.total_tokens
        )

    return one


def engine_defaults_user(start: int) -> Callable[[OpenAIChatModel, int], UserOutcome]:
    """``generate_structured`` with its default retry policy and a token policy starting at ``start``."""
    output_model = create_agent_output_model(SLOT_COUNT)

    def one(model: OpenAIChatModel, number: int) -> UserOutcome:
        try:
            result = generate_structured(
                model,
                output_model,
                build_messages(grounding_for(number)),
                StructuredOptions(token_policy=GrowingTokenPolicy(initial=start), purpose="bench.engine_defaults"),
            )
        except StructuredOutputError as error:
            return UserOutcome(number, None, error.kind)
        return UserOutcome(number, result.value.model_dump(by_alias=True, mode="json"), None, result.usage.total_tokens)

    return one


VERSIONS: dict[str, dict[str, str]] = {}


def peer_side(peer: Peer, label: str, max_tokens: int | None) -> Side:
    def side(base_url: str, users: list[int]) -> tuple[list[UserOutcome], float]:
        job = {
            "task": "commander",
            "base_url": base_url,
            "model": MODEL,
            "slot_count": SLOT_COUNT,
            "max_tokens": max_tokens,
            "concurrency": CONCURRENCY,
            "label": label,
            "users": [{"number": number, "messages": build_messages(grounding_for(number))} for number in users],
        }
        answer = run_peer(peer, job)
        VERSIONS[peer.name] = answer.get("versions", {})
        outcomes = [
            UserOutcome(
                item["user"], item.get("output") if item["ok"] else None, item.get("error"), item.get("reported_tokens")
            )
            for item in answer["results"]
        ]
        return outcomes, float(answer["wall_s"])

    return side


def sides_for(run: Run) -> list[tuple[str, Side]]:
    instructor, pydantic_ai = PEER_SPECS
    if run.key == RAMP_START.key:
        return [
            ("lambda_agents Commander (own ramp)", product_side("Commander", commander_user(None))),
            (f"Instructor, max_tokens={run.start}", peer_side(instructor, "Instructor", run.start)),
            ("Instructor, no max_tokens", peer_side(instructor, "Instructor", None)),
            (f"Pydantic AI, max_tokens={run.start}", peer_side(pydantic_ai, "Pydantic AI", run.start)),
            ("Pydantic AI, no max_tokens", peer_side(pydantic_ai, "Pydantic AI", None)),
        ]
    commander_policy = GrowingTokenPolicy(initial=run.start)
    return [
        ("lambda_agents engine (defaults)", product_side("engine", engine_defaults_user(run.start))),
        ("lambda_agents Commander (own retries)", product_side("Commander", commander_user(commander_policy))),
        (f"Instructor, max_tokens={run.start}", peer_side(instructor, "Instructor", run.start)),
        (f"Pydantic AI, max_tokens={run.start}", peer_side(pydantic_ai, "Pydantic AI", run.start)),
    ]


@dataclass
class SideResult:
    row: SideRow
    outcomes: list[UserOutcome]
    bill: Bill
    classes: list[ClassRow] = field(default_factory=list)


def commander_run(run: Run) -> list[SideResult]:
    users = list(range(1, run.users + 1))
    labels = {number: plan.labels for number, plan in run.plans().items()}
    results = []
    for label, side in sides_for(run):
        progress(f"{run.key} start, {label}: {len(users)} users")
        with FaultMixServer(run.seed, users, run.rates, run.sizes) as server:
            outcomes, wall_s = side(server.base_url, users)
        row = summarise(label, outcomes, server.bill, wall_s)
        results.append(SideResult(row, outcomes, server.bill, by_fault_class(outcomes, server.bill, labels)))
        progress(f"{run.key} start, {label}: {row.served}/{row.users} served, {row.calls} calls, {wall_s:.1f} s")
    return results


def _fmt(value: float | None, pattern: str) -> str:
    return "n/a" if value is None else format(value, pattern)


def truncated_sequences(run: Run, bill: Bill) -> str:
    """The max_tokens each request of the first and the last verbose user asked for."""
    verbose = [number for number, plan in run.plans().items() if plan.verbose]
    if not verbose:
        return "-"

    def sequence(number: int) -> str:
        asked = bill.max_tokens_by_user.get(number, [])
        return " → ".join("none" if value is None else f"{value:,}" for value in asked) or "-"

    return f"#{verbose[0]}: {sequence(verbose[0])}; #{verbose[-1]}: {sequence(verbose[-1])}"


def truncation_summary(bill: Bill) -> str:
    per_user = bill.truncated_by_user
    if not per_user:
        return "none"
    once = sum(count == 1 for count in per_user.values())
    more = len(per_user) - once
    return (
        f"{len(per_user)} users truncated ({once} once, {more} more than once), the last of them user #{max(per_user)}"
    )


def commander_table(run: Run, results: list[SideResult]) -> list[str]:
    lines = [
        "| side | served by model | fallback | users missing nudges | LLM calls | truncated answers | calls / success "
        "| billed tokens / success | tokens reported to caller / billed "
        "| max_tokens asked, first / last verbose user | wall s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for result in results:
        row = result.row
        reported = "n/a"
        if row.reported_tokens is not None and row.billed_for_served:
            reported = f"{row.reported_tokens / row.billed_for_served:.0%}"
        lines.append(
            f"| {row.side} | {row.served}/{row.users} ({row.served_share:.0%}) | {row.fallbacks} "
            f"| {row.users_missing_nudges} | {row.calls} | {row.truncated} | {_fmt(row.calls_per_success, '.2f')} "
            f"| {_fmt(row.tokens_per_success, ',.0f')} | {reported} | {truncated_sequences(run, result.bill)} "
            f"| {row.wall_s:.1f} |"
        )
    return lines


CLASS_NAMES = {
    "clean": "no fault",
    "verbose": "truncated (needs more than the start)",
    "wrong_length": "wrong appNudges length once",
    "refusal": "refuses every time",
    "content_filter": "content_filter once",
    "429": "429 + Retry-After once",
    "500": "500 once",
    "slow": "slow first answer (1.5 s)",
}


def class_table(results: list[SideResult]) -> list[str]:
    header = "| fault class (users) | " + " | ".join(result.row.side for result in results) + " |"
    lines = [header, "|---|" + "---:|" * len(results)]
    for index, first in enumerate(results[0].classes):
        cells = []
        for result in results:
            row = result.classes[index]
            cells.append(
                f"{row.served}/{row.users} · {_fmt(row.calls_per_success, '.2f')} · "
                f"{_fmt(row.tokens_per_success, ',.0f')}"
            )
        lines.append(f"| {CLASS_NAMES.get(first.label, first.label)} ({first.users}) | " + " | ".join(cells) + " |")
    return lines


def configuration_notes() -> list[str]:
    def versions(name: str) -> str:
        return ", ".join(f"{package} {version}" for package, version in VERSIONS.get(name, {}).items())

    ramp = "/".join(str(estimate_max_tokens(SLOT_COUNT, attempt)) for attempt in range(3))
    return [
        "Configurations (every side: 8 users at a time, the same prompt, calls and tokens counted by the server, "
        "failed and timed-out answers included, a truncated answer billed at its max_tokens; a side that raises "
        "gets the rule-based fallback):",
        f"- lambda_agents Commander: nudges.commander.run_commander -> llm.generate_structured, strict json_schema, "
        f"the Commander's retry policy (3 attempts, 1 s / 2 s backoff, Retry-After honoured, content_filter retried, "
        f"refusal not), max_tokens from the Commander's ramp ({ramp}) or from 1,000 in the same-start run; after a "
        f"truncation the engine asks for the partial answer's estimated need + 25 %; a type's learned need starts "
        f"its next call; openai client max_retries=0, streamed, {PRODUCT_TIMEOUT_S:g} s first-token timeout.",
        "- lambda_agents engine (defaults): llm.generate_structured(model, CommanderOutput15Slots, messages, "
        "token_policy=GrowingTokenPolicy(initial=1000)) with the default RetryPolicy (3 attempts, content_filter "
        "retried at once, refusal not, transient failures backed off from 1 s).",
        f"- Instructor ({versions('instructor')}): instructor.from_openai(OpenAI(base_url=...)) in its default "
        "Mode.TOOLS, chat.completions.create_with_completion(response_model=CommanderOutput, max_retries=2"
        "[, max_tokens]); the openai client's defaults "
        "(max_retries=2 on 429/5xx honouring Retry-After, 600 s timeout).",
        f"- Pydantic AI ({versions('pydantic_ai')}): "
        "Agent(OpenAIChatModel(..., provider=OpenAIProvider(base_url=...)), "
        "output_type=CommanderOutput, retries={'output': 2}) with its default tool output, "
        "model_settings max_tokens when set; the provider's default openai client (max_retries=2, default timeout).",
        f"- Fault server: a request without max_tokens is capped at {DEFAULT_CAP}; a truncated answer is the first "
        f"max_tokens/needed of the whole answer's text; Retry-After {RETRY_AFTER_S:g} s; slow answers take "
        f"{SLOW_S:g} s.",
        "- wall s: the server answers at once, so it measures CPU, not the model. The product's side streams "
        "(one chunk per token, as OpenAI sends them: ~3,000 chunks for a plan) through a fake server in its "
        "own process, sharing one interpreter lock; the peers' answers come whole from a server of their "
        "own. At a real model's pace that parsing is ~1 % of the answer's time (benchmarks/real_speed_bench.py).",
    ]


def plan_summary(run: Run) -> str:
    counts: dict[str, int] = {}
    for plan in run.plans().values():
        for label in plan.labels or ["clean"]:
            counts[label] = counts.get(label, 0) + 1
    return ", ".join(f"{label} {count}" for label, count in sorted(counts.items()))


def run_section(run: Run) -> list[str]:
    results = commander_run(run)
    sizes = f"answers need {run.sizes.compact[0]:,}-{run.sizes.compact[1]:,} tokens, verbose ones "
    sizes += f"{run.sizes.verbose[0]:,}-{run.sizes.verbose[1]:,}"
    lines = [f"## Commander task, {run.title} ({run.users} users, seed {run.seed})", ""]
    lines += commander_table(run, results)
    lines += ["", f"Fault mix ({sizes}; a user may have several faults): {plan_summary(run)}.", ""]
    lines += ["By fault class (served by the model · calls per success · billed tokens per success):", ""]
    lines += class_table(results)
    lines += ["", "Truncated answers per user (every request billed, in the order users were started):"]
    lines += [f"- {result.row.side}: {truncation_summary(result.bill)}" for result in results]
    lines += ["", "Why users fell back:"]
    lines += [
        f"- {result.row.side}: "
        + (", ".join(f"{kind} {count}" for kind, count in sorted(result.row.failures.items())) or "none")
        for result in results
    ]
    return lines


EXTRACT_REPEAT = 20


def extraction_rows() -> list[tuple[str, list[dict[str, Any]]]]:
    from lambda_agents.llm.json_extraction import extract_json

    rows = [
        ("lambda_agents extract_json", measure(extract_json, EXTRACT_REPEAT)),
        ("naive first { .. last } + json.loads", measure(naive_first_last_brace, EXTRACT_REPEAT)),
    ]
    for peer, label in zip(
        PEER_SPECS, ("Instructor extract_json_from_codeblock", "Pydantic AI strip_markdown_fences"), strict=True
    ):
        answer = run_peer(peer, {"task": "extract", "repeat": EXTRACT_REPEAT})
        rows.append((label, answer["outcomes"]))
    return rows


def extraction_table(rows: list[tuple[str, list[dict[str, Any]]]]) -> list[str]:
    expected = {case.name: case for case in CASES}
    total_kb = sum(len(case.text.encode("utf-8")) for case in CASES) / 1024
    lines = [
        "| extractor | expected result | wrong object returned | µs per KB (all cases) | missed cases |",
        "|---|---:|---:|---:|---|",
    ]
    for label, outcomes in rows:
        hits, wrong, missed = 0, 0, []
        for outcome in outcomes:
            want = expected[outcome["name"]].expected
            if outcome["value"] == want:
                hits += 1
                continue
            missed.append(outcome["name"])
            wrong += outcome["value"] is not None
        seconds = sum(outcome["seconds"] for outcome in outcomes)
        per_kb = f"{seconds / total_kb * 1e6:,.1f}"
        lines.append(f"| {label} | {hits}/{len(outcomes)} | {wrong} | {per_kb} | {'; '.join(missed) or '-'} |")
    return lines


# The quick mode's users per run: every fault class of each mix still present (benchmarks/README.md).
QUICK_USERS = {SAME_START.key: 40, RAMP_START.key: 30}


def quick_runs() -> tuple[Run, ...]:
    return tuple(replace(run, users=QUICK_USERS[run.key]) for run in (SAME_START, RAMP_START))


def main(quick: bool = False) -> None:
    runs = quick_runs() if quick else (SAME_START, RAMP_START)
    lines: list[str] = []
    if quick:
        full = {run.key: run.users for run in (SAME_START, RAMP_START)}
        sizes = ", ".join(f"{run.key} start {run.users} of {full[run.key]} users (seed {run.seed})" for run in runs)
        lines += [
            f"Quick mode: {sizes}; the same sides, peers, fault plans and code paths as the full run, "
            "fewer users. The full run: python -m benchmarks.run_all peers_bench.",
            "",
        ]
    for run in runs:
        lines += [*run_section(run), ""]
    lines += configuration_notes()
    lines += ["", "## Status judge: JSON recovered from messy answers", ""]
    progress("messy answers: extraction through each side")
    lines += extraction_table(extraction_rows())
    lines += [
        "",
        f"{len(CASES)} cases in benchmarks/peers/messy_answers.py (prose, fences, concatenated objects where the "
        "last is the answer, quoted earlier verdicts, trailing braces, arrays, truncated JSON, ~120 KB inputs); "
        "a truncated answer must yield nothing. Peers: instructor.v2.core.json.extract_json_from_codeblock "
        "(its MD_JSON/JSON text path) and pydantic_ai._utils.strip_markdown_fences (ObjectOutputProcessor.validate), "
        f"each followed by pydantic_core.from_json as in their validate_json; mean of {EXTRACT_REPEAT} runs per case.",
    ]
    print("\n".join(lines))
    if not quick:  # peers.md holds the full run's figures; a quick run goes to the console and quick.md
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text("# Peer benchmark\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
    progress("done")


def main_quick() -> None:
    main(quick=True)


if __name__ == "__main__":
    arguments = benchmark_arguments(__file__, __doc__, quick="fewer users (QUICK_USERS); peers.md is left alone")
    main(quick=arguments.quick)
