"""Peer benchmark (issue 7): the nudge Commander task through this product's engine, Instructor
and Pydantic AI against one seeded fault mix, and the judge's messy-answer corpus through each
side's JSON-from-text extraction. Prints both tables and writes them to
``benchmarks/results/peers.md``.

Each peer runs in its own virtualenv under ``benchmarks/.venvs/<peer>`` (Instructor pins a jiter
the product's openai cannot use), created on the first run with uv and reused afterwards. The
product side runs in-process through ``lambda_agents.nudges.commander.run_commander``
(``generate_structured`` with the spec's estimate_max_tokens ramp, 3 attempts, 1 s / 2 s backoff,
then ``RuleBasedFallback``). Everything listens and connects on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lambda_agents.nudges.commander import Grounding, build_messages, run_commander
from lambda_agents.nudges.slots import Slot
from lambda_agents.nudges.tokens import estimate_max_tokens
from lambda_agents.observability import logger

from benchmarks.peers.accounting import SideRow, UserOutcome, summarise
from benchmarks.peers.commander_task import SLOT_COUNT
from benchmarks.peers.fault_mix import DEFAULT_CAP, RETRY_AFTER_S, SLOW_S, USER_MARKER, FaultMixServer, FaultPlan
from benchmarks.peers.messy_answers import CASES, measure, naive_first_last_brace

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PEERS = HERE / "peers"
VENVS = HERE / ".venvs"
RESULTS = HERE / "results" / "peers.md"
UV = ROOT / ".tools" / "venv" / "bin" / "uv"
SEED = 7
USERS = 40
CONCURRENCY = 8
MODEL = "gpt-4o-2024-08-06"
PRODUCT_TIMEOUT_S = 1.0  # stands for the Lambda's 25 s request timeout, scaled to the 1.5 s "slow" answer
PEER_TIMEOUT_S = 120.0  # bound on a whole peer subprocess (the openai default per request is 600 s)


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
    for command in (
        [str(UV), "venv", "--quiet", "--allow-existing", "-p", sys.executable, str(venv)],
        [str(UV), "pip", "install", "--quiet", "-p", str(python), *peer.requirements],
    ):
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"setting up the {peer.name} venv failed: {done.stderr[-2000:]}")
    marker.write_text(wanted, encoding="utf-8")
    return python


def run_peer(peer: Peer, job: dict[str, Any]) -> dict[str, Any]:
    python = peer_python(peer)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "PYTHONPATH"))}
    env["OPENAI_API_KEY"] = "bench"  # never a real key: the base_url is the local fault server
    done = subprocess.run(
        [str(python), str(PEERS / peer.script)],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=PEER_TIMEOUT_S,
        env=env,
        cwd=PEERS,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{peer.name} failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout)  # type: ignore[no-any-return]


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


def run_product(base_url: str, users: list[int]) -> tuple[list[UserOutcome], float]:
    from lambda_agents.llm.openai_model import OpenAIChatModel

    model = OpenAIChatModel(api_key="bench", model=MODEL, base_url=base_url, timeout_s=PRODUCT_TIMEOUT_S)

    def one(number: int) -> UserOutcome:
        result = run_commander(model, grounding_for(number), request_timeout_s=PRODUCT_TIMEOUT_S)
        if result.fallback_used:
            return UserOutcome(number, None, result.fallback_reason)
        return UserOutcome(
            number, result.output.model_dump(by_alias=True, mode="json"), None, result.usage.total_tokens
        )

    level = logger.log_level
    logger.setLevel("WARNING")  # one INFO line per attempt would bury the table
    started = time.perf_counter()
    try:
        with ThreadPoolExecutor(CONCURRENCY) as pool:
            outcomes = list(pool.map(one, users))
    finally:
        logger.setLevel(level)
    return outcomes, time.perf_counter() - started


def peer_side(peer: Peer, max_tokens: int | None) -> Callable[[str, list[int]], tuple[list[UserOutcome], float]]:
    def side(base_url: str, users: list[int]) -> tuple[list[UserOutcome], float]:
        job = {
            "task": "commander",
            "base_url": base_url,
            "model": MODEL,
            "slot_count": SLOT_COUNT,
            "max_tokens": max_tokens,
            "concurrency": CONCURRENCY,
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


VERSIONS: dict[str, dict[str, str]] = {}


def commander_rows(users: list[int]) -> list[tuple[SideRow, list[UserOutcome]]]:
    first = estimate_max_tokens(SLOT_COUNT, 0)
    sides: list[tuple[str, Callable[[str, list[int]], tuple[list[UserOutcome], float]]]] = [
        ("lambda_agents (engine)", run_product),
        (f"Instructor, max_tokens={first}", peer_side(PEER_SPECS[0], first)),
        ("Instructor, no max_tokens", peer_side(PEER_SPECS[0], None)),
        (f"Pydantic AI, max_tokens={first}", peer_side(PEER_SPECS[1], first)),
        ("Pydantic AI, no max_tokens", peer_side(PEER_SPECS[1], None)),
    ]
    rows = []
    for label, side in sides:
        with FaultMixServer(SEED, users) as server:
            outcomes, wall_s = side(server.base_url, users)
            rows.append((summarise(label, outcomes, server.bill, wall_s), outcomes))
    return rows


def _fmt(value: float | None, pattern: str) -> str:
    return "n/a" if value is None else format(value, pattern)


def commander_table(rows: list[SideRow]) -> list[str]:
    lines = [
        "| side | served by model | fallback | users missing nudges | LLM calls | calls / success "
        "| billed tokens / success | tokens reported to caller / billed | wall s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        reported = "n/a"
        if row.reported_tokens is not None and row.billed_for_served:
            reported = f"{row.reported_tokens / row.billed_for_served:.0%}"
        lines.append(
            f"| {row.side} | {row.served}/{row.users} ({row.served_share:.0%}) | {row.fallbacks} "
            f"| {row.users_missing_nudges} | {row.calls} | {_fmt(row.calls_per_success, '.2f')} "
            f"| {_fmt(row.tokens_per_success, ',.0f')} | {reported} | {row.wall_s:.1f} |"
        )
    return lines


def configuration_notes() -> list[str]:
    def versions(name: str) -> str:
        return ", ".join(f"{package} {version}" for package, version in VERSIONS.get(name, {}).items())

    ramp = "/".join(str(estimate_max_tokens(SLOT_COUNT, attempt)) for attempt in range(3))
    return [
        "Configurations (every side: 8 users at a time, the same prompt, calls and tokens counted by the server, "
        "failed and timed-out answers included; a side that raises gets the rule-based fallback):",
        f"- lambda_agents: nudges.commander.run_commander -> llm.generate_structured, strict json_schema, "
        f"max_tokens {ramp} (estimate_max_tokens ramp), 3 attempts, 1 s / 2 s backoff (Retry-After honoured), "
        f"refusal not retried, openai client max_retries=0, {PRODUCT_TIMEOUT_S:g} s request timeout, "
        "then RuleBasedFallback.",
        f"- Instructor ({versions('instructor')}): instructor.from_openai(OpenAI(base_url=...)) in its default "
        "Mode.TOOLS, chat.completions.create_with_completion(response_model=CommanderOutput, max_retries=2"
        "[, max_tokens]); the openai client's defaults "
        "(max_retries=2 on 429/5xx honouring Retry-After, 600 s timeout).",
        f"- Pydantic AI ({versions('pydantic_ai')}): "
        "Agent(OpenAIChatModel(..., provider=OpenAIProvider(base_url=...)), "
        "output_type=CommanderOutput, retries={'output': 2}) with its default tool output, "
        "model_settings max_tokens when set; the provider's default openai client (max_retries=2, default timeout).",
        f"- Fault server: answers need 1,500-2,000 tokens, or 2,750-4,700 for verbose users; a request without "
        f"max_tokens is capped at {DEFAULT_CAP}; Retry-After {RETRY_AFTER_S:g} s; slow answers take {SLOW_S:g} s.",
    ]


def plan_summary(users: list[int]) -> str:
    counts: dict[str, int] = {}
    for number in users:
        for label in FaultPlan.for_user(SEED, number).labels or ["clean"]:
            counts[label] = counts.get(label, 0) + 1
    return ", ".join(f"{label} {count}" for label, count in sorted(counts.items()))


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


def main() -> None:
    users = list(range(1, USERS + 1))
    rows = commander_rows(users)
    lines = ["## Commander task (spec 000): 15 slots, seeded fault mix", ""]
    lines += commander_table([row for row, _ in rows])
    lines += ["", *configuration_notes(), "", "Why users fell back:"]
    lines += [
        f"- {row.side}: " + (", ".join(f"{kind} {count}" for kind, count in sorted(row.failures.items())) or "none")
        for row, _ in rows
    ]
    lines += ["", f"Fault mix (seed {SEED}, {USERS} users; a user may have several): {plan_summary(users)}."]
    lines += ["", "## Status judge: JSON recovered from messy answers", ""]
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
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("# Peer benchmark\n\n" + "\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
