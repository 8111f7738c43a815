"""The first model's provider down: how many users a model still serves, and what it costs them.

How it runs, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import time
from dataclasses import dataclass

from lambda_agents.config import LLMSettings, load_settings
from lambda_agents.llm import Deadline
from lambda_agents.llm.factory import build_chat_model
from lambda_agents.llm.offline_model import sample
from lambda_agents.llm.schema import model_schema
from lambda_agents.nudges.commander import Grounding, run_commander
from lambda_agents.nudges.schema import create_agent_output_model
from lambda_agents.nudges.slots import DEFAULT_SCHEDULE_MAP, Slot, build_slot_table

from benchmarks.command_line import benchmark_arguments
from devtools.fake_openai import GPT_4O, FakeOpenAIServer, Fault, Reply, Slow

SCALE = 0.02  # 50x faster than real
USERS = 20
LAMBDA_S = 300.0  # the generator's timeout: each user's deadline
PROBLEMS = ("staying_up_late", "procrastination")
OUTAGES: dict[str, Fault | Slow | None] = {
    "500s": Fault(500),
    "no first token": Slow(120.0),
    "429 storm": Fault(429, retry_after=20),
    "key refused (401)": None,  # the account refuses the first model's key
}
CONFIGS = ("today", "breaker", "second model")


@dataclass(frozen=True)
class Row:
    outage: str
    config: str
    served: int
    first_calls: int
    second_calls: int
    waits: list[float]
    openings: int  # ModelBreakerOpened metrics the run emitted


def environment(first: FakeOpenAIServer, second: FakeOpenAIServer, config: str) -> dict[str, str]:
    env = {
        "AI_AGENT_MODE": "openai",
        "OPENAI_MODEL": "gpt-4o",
        "OPENAI_BASE_URL": first.base_url,
        "OPENAI_API_KEY": "sk-first",
        "OPENAI_FIRST_TOKEN_TIMEOUT_SECONDS": f"{30 * SCALE:g}",
        "OPENAI_STALL_TIMEOUT_SECONDS": f"{15 * SCALE:g}",
        "OPENAI_TOKENS_PER_SECOND": f"{60 / SCALE:g}",
        "OPENAI_FIRST_TOKEN_SECONDS": f"{1.2 * SCALE:g}",
        "OPENAI_BREAKER_COOLDOWN_SECONDS": f"{30 * SCALE:g}",
        "OPENAI_BREAKER_FAILURES": "0" if config == "today" else "5",
    }
    if config == "second model":
        env["OPENAI_FALLBACK_MODELS"] = json.dumps(
            [{"model": "gpt-4o-mini", "baseUrl": second.base_url, "apiKey": "sk-second"}]
        )
    return env


def grounding(user: int, slots: tuple[Slot, ...]) -> Grounding:
    return Grounding(
        user_id=f"user-{user}",
        problems=PROBLEMS,
        language="en",
        app_version="2.4.0",
        local_date="2026-11-27",
        timezone="Asia/Tokyo",
        slot_table=slots,
    )


def run(outage: str, config: str) -> Row:
    slots = tuple(build_slot_table(list(PROBLEMS), DEFAULT_SCHEDULE_MAP))
    plan = json.dumps(sample(model_schema(create_agent_output_model(len(slots))), "en"))
    keys = frozenset({"sk-other"}) if OUTAGES[outage] is None else None
    with (
        FakeOpenAIServer(profile=GPT_4O, time_scale=SCALE, seed=5, api_keys=keys) as first,
        FakeOpenAIServer(profile=GPT_4O, time_scale=SCALE, seed=6) as second,
    ):
        step = OUTAGES[outage]
        if step is not None:
            first.set_outage(step)
        second.enqueue(*(Reply(content=plan) for _ in range(USERS * 3)))
        model = build_chat_model(load_settings(LLMSettings, environment(first, second, config)))
        served, waits = 0, []
        metrics = io.StringIO()  # the breaker's EMF lines, counted instead of printed
        with contextlib.redirect_stdout(metrics):
            for user in range(USERS):
                started = time.monotonic()
                result = run_commander(
                    model,
                    grounding(user, slots),
                    deadline=Deadline.after(LAMBDA_S * SCALE),
                    sleep=lambda seconds: time.sleep(seconds * SCALE),
                )
                waits.append((time.monotonic() - started) / SCALE)
                served += not result.fallback_used
        openings = metrics.getvalue().count('"ModelBreakerOpened":')
        # keys_seen: every request that reached the server, refused keys included
        return Row(outage, config, served, len(first.keys_seen), len(second.keys_seen), waits, openings)


def main() -> None:
    print(f"the first provider down, {USERS} users of one container in turn, the Commander's day (6 slots)")
    print("gpt-4o's pace, every time 50x faster than real; waits in real seconds")
    print(
        f"{'outage':<18} {'configuration':<13} {'served by a model':>17} {'calls/user 1st':>14} "
        f"{'2nd':>5} {'wait mean s':>11} {'worst s':>8} {'breaker opened':>14}"
    )
    for outage in OUTAGES:
        for config in CONFIGS:
            row = run(outage, config)
            print(
                f"{row.outage:<18} {row.config:<13} {row.served / USERS:>16.0%} {row.first_calls / USERS:>14.2f} "
                f"{row.second_calls / USERS:>5.2f} {statistics.mean(row.waits):>11.1f} {max(row.waits):>8.1f} "
                f"{row.openings:>14}"
            )


if __name__ == "__main__":
    benchmark_arguments(__file__, __doc__)
    main()
