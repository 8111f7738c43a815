"""One SQS batch of the nudge generator against one plan: does a batch of 10 take one plan's time?

The template's generator (512 MB: Lambda shows it 2 vCPUs) runs in a local runner container, fed
by the template's queue and event source, the real openai client against the fake server writing
every plan's ~3,000 tokens at 60 tokens/s after a 0.5 s first token (gpt-4o's typical pace: 50 s
a plan). Three runs, in the same process run, each from a fresh queue and a fresh container:

- **one plan**: a batch of one user, the time a user of any batch needs at least;
- **batch of 10, 6 at once**: the sizing the handler had before (asyncio's default executor,
  min(32, vCPUs + 4) = 6 threads on 2 vCPUs), set here with ``NUDGE_BATCH_CONCURRENCY=6``;
- **batch of 10**: the product as deployed (its own pool, one thread per record).

Time is the fake server's: from the batch's first request to its last answer, in the model's
seconds (the server runs ``GENERATOR_BATCH_BENCH_SCALE`` times real time, 0.25 by default; 1.0 is
real time). Printed: seconds, plans in flight at once, and each run's time as a multiple of one
plan's; the product's claim is a batch of 10 within 1.4x of one plan.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Bench")
os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"

from lambda_agents.llm.offline_model import sample
from lambda_agents.llm.schema import model_schema
from lambda_agents.nudges.schema import create_agent_output_model

from benchmarks.command_line import benchmark_arguments
from devtools.fake_openai import FakeOpenAIServer, Reply
from devtools.runner import LocalRunner
from devtools.runner_lambda import lambda_vcpus
from devtools.runner_template import function_specs
from devtools.template import load_template

SCALE = float(os.environ.get("GENERATOR_BATCH_BENCH_SCALE", "0.25"))
PLAN_TOKENS = 3_000
TOKENS_PER_S = 60.0
FIRST_TOKEN_S = 0.5
BATCH = 10  # NudgeQueue's BatchSize
OLD_THREADS = 6  # min(32, 2 + 4): asyncio's default executor on the 2 vCPUs of 512 MB
CLAIM = 1.4
PROBLEMS = ("staying_up_late", "procrastination", "anxiety")  # 15 slots: a plan's max_tokens 4,095


@dataclass
class Run:
    name: str
    users: int
    threads: int | None  # NUDGE_BATCH_CONCURRENCY, None: the template's
    seconds: float = 0.0
    at_once: int = 0
    by_model: int = 0


def plan() -> Reply:
    content = json.dumps(sample(model_schema(create_agent_output_model(15)), "en"))
    return Reply(content=content, needs_tokens=PLAN_TOKENS, first_token_s=FIRST_TOKEN_S, tokens_per_s=TOKENS_PER_S)


def _user_item(user_id: str) -> dict[str, Any]:
    return {
        "userId": {"S": user_id},
        "problems": {"L": [{"S": problem} for problem in PROBLEMS]},
        "preferredLanguage": {"S": "en"},
        "timezone": {"S": "Asia/Tokyo"},
        "nudgesEnabled": {"BOOL": True},
        "appVersion": {"S": "2.4.0"},
    }


def measure(run: Run) -> Run:
    """``run.users`` queued, drained by the template's event source into one batch."""
    today = datetime.now(ZoneInfo("Asia/Tokyo")).date().isoformat()
    environ = {**os.environ, "AWS_DEFAULT_REGION": "us-east-1"}
    with FakeOpenAIServer(time_scale=SCALE) as server, LocalRunner(environ=environ) as runner:
        dynamodb = runner.aws.client("dynamodb")
        for n in range(run.users):
            dynamodb.put_item(TableName="UsersTable", Item=_user_item(f"user-{n}"))
            runner.send_message("NudgeQueue", json.dumps({"userId": f"user-{n}", "localDate": today}))
        server.enqueue(*(plan() for _ in range(run.users)))
        overrides = {
            "AI_AGENT_MODE": "openai",
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "bench",
            "OPENAI_MODEL": "gpt-4o",
            # The pace the engine plans with, scaled like the server (its waits keep their length).
            "OPENAI_FIRST_TOKEN_SECONDS": str(1.2 * SCALE),
            "OPENAI_TOKENS_PER_SECOND": str(TOKENS_PER_S / SCALE),
            "POWERTOOLS_LOG_LEVEL": "ERROR",
        }
        if run.threads is not None:
            overrides["NUDGE_BATCH_CONCURRENCY"] = str(run.threads)
        report = runner.drain_like_lambda("NudgeQueue", time_limit_s=600, env_overrides=overrides)
        schedules = dynamodb.scan(
            TableName="SchedulesTable",
            FilterExpression="begins_with(sk, :schedule)",
            ExpressionAttributeValues={":schedule": {"S": "SCHEDULE#"}},
        )["Items"]
        runner.aws.reset()
    if report.batch_sizes != [run.users] or report.succeeded != run.users:
        raise RuntimeError(f"{run.name}: not one batch served whole: {report.summary()}")
    billing = server.billing
    run.seconds = (max(r.started_at + r.seconds for r in billing) - min(r.started_at for r in billing)) / SCALE
    run.at_once = server.most_at_once()
    run.by_model = sum(1 for item in schedules if item["fallbackUsed"]["BOOL"] is False)
    return run


def main() -> None:
    memory = function_specs(load_template())["NudgeGeneratorFunction"].memory_mb
    started = time.monotonic()
    runs = [
        measure(Run("one plan", 1, None)),
        measure(Run(f"batch of {BATCH}, {OLD_THREADS} at once (the default executor's sizing)", BATCH, OLD_THREADS)),
        measure(Run(f"batch of {BATCH} (the handler's own pool)", BATCH, None)),
    ]
    one = runs[0].seconds
    print(
        f"## One SQS batch of the nudge generator against one plan: {PLAN_TOKENS:,}-token plans at "
        f"{TOKENS_PER_S:g} tokens/s after {FIRST_TOKEN_S:g} s, {memory} MB ({lambda_vcpus(memory)} vCPUs shown), "
        f"the model's seconds (server at {SCALE:g}x real time)\n"
    )
    print("| run | users | plans in flight at once | served by the model | seconds | x one plan |")
    print("| --- | --- | --- | --- | --- | --- |")
    for run in runs:
        print(
            f"| {run.name} | {run.users} | {run.at_once} | {run.by_model} | {run.seconds:.1f} | "
            f"{run.seconds / one:.2f} |"
        )
    batch = runs[-1]
    verdict = "within" if batch.seconds <= CLAIM * one else "NOT within"
    print(
        f"\nA batch of {BATCH} took {batch.seconds / one:.2f}x one plan: {verdict} the claimed {CLAIM}x "
        f"(6 at once: {runs[1].seconds / one:.2f}x); bench {time.monotonic() - started:.0f} s of real time."
    )


if __name__ == "__main__":
    benchmark_arguments(
        __file__,
        __doc__,
        settings={
            "GENERATOR_BATCH_BENCH_SCALE": "the fake server's time as a share of real time (0.25; 1.0: real time)"
        },
    )
    main()
