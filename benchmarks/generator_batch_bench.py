"""One SQS batch of the nudge generator against one plan: does a batch of 10 take one plan's time?

How it runs, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Bench")
os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"

from lambda_agents.llm.offline_model import sample
from lambda_agents.llm.schema import model_schema
from lambda_agents.nudges.profile import UserProfile
from lambda_agents.nudges.schema import create_agent_output_model

from benchmarks.command_line import benchmark_arguments
from devtools.fake_openai import FakeOpenAIServer, Reply
from devtools.local_aws import put_profiles
from devtools.runner import LocalRunner
from devtools.runner_lambda import lambda_vcpus
from devtools.runner_template import function_specs
from devtools.template import load_template
from devtools.time_scale import model_environment

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


def _profile(user_id: str) -> UserProfile:
    return UserProfile(user_id=user_id, problems=PROBLEMS, timezone="Asia/Tokyo", app_version="2.4.0")


def measure(run: Run) -> Run:
    """``run.users`` queued, drained by the template's event source into one batch."""
    today = datetime.now(ZoneInfo("Asia/Tokyo")).date().isoformat()
    environ = {**os.environ, "AWS_DEFAULT_REGION": "us-east-1"}
    with FakeOpenAIServer(time_scale=SCALE) as server, LocalRunner(environ=environ) as runner:
        dynamodb = runner.aws.client("dynamodb")
        for n in range(run.users):
            put_profiles(dynamodb, _profile(f"user-{n}"))
            runner.send_message("NudgeQueue", json.dumps({"userId": f"user-{n}", "localDate": today}))
        server.enqueue(*(plan() for _ in range(run.users)))
        overrides = model_environment(server.base_url, SCALE)  # the pace scaled like the server; waits real
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
