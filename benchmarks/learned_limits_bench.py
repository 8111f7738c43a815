"""The fan-out under a provider limit nobody configured: what the containers learn from the
provider's headers, and how close the drain comes to what the limit allows.

How it runs, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from dataclasses import dataclass
from datetime import datetime
from typing import Literal
from zoneinfo import ZoneInfo

os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Bench")
os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"
os.environ.setdefault("OTEL_SDK_DISABLED", "true")


from benchmarks import fanout_bench
from benchmarks.command_line import benchmark_arguments
from devtools.fake_openai import DEFAULT_ACCOUNT, RateLimit, SpeedProfile
from devtools.time_scale import scale_product, unscale_product

SCALE = float(os.environ.get("LEARNED_LIMITS_BENCH_SCALE", "1.0"))
USERS = 40
ACCOUNT = RateLimit(requests_per_minute=20, tokens_per_minute=2_000_000)  # the requests bind
PLAN_TOKENS = 3_000
# A fast model: a first token within 0.2-1.2 s, then 300 tokens/s, so a plan takes ~10.7 s. The
# product is told nothing of its pace (``model_environment``: its defaults, 60 tokens/s).
PACE = SpeedProfile("300 tokens/s", (0.2, 1.2), (300.0, 300.0, 300.0))
GOAL = 1.25  # x the bound: a learned limit may take at most this much longer than the limit allows


@dataclass
class Side:
    name: str
    configured: bool
    headers: bool | Literal["refusals"] = True
    account: RateLimit = ACCOUNT
    served: int = 0
    fallbacks: int = 0
    dead_lettered: int = 0
    refused: int = 0
    deferred: int = 0
    drain_s: float = 0.0
    runner_s: float = 0.0
    answer_s: float = 0.0

    def row(self, bound_s: float, runner_bound_s: float) -> str:
        return (
            f"| {self.name} | {self.served}/{USERS} | {self.fallbacks} | {self.dead_lettered} | {self.refused} | "
            f"{self.deferred} | {self.drain_s:.1f} | {self.drain_s / bound_s:.2f}x | {self.runner_s:.1f} | "
            f"{self.runner_s / runner_bound_s:.2f}x |"
        )


def run(side: Side) -> Side:
    """The side through the local runner, every time of the template and of the product scaled."""
    from devtools.local_aws import put_profiles
    from devtools.runner import LocalRunner
    from devtools.template import load_template
    from devtools.time_scale import container_environment, model_environment, scaled_template

    template = scaled_template(load_template(), SCALE)
    parameters = {
        "ProviderRequestsPerMinute": str(ACCOUNT.requests_per_minute if side.configured else 0),
        "ProviderTokensPerMinute": str(ACCOUNT.tokens_per_minute if side.configured else 0),
    }
    local_date = datetime.now(ZoneInfo(fanout_bench.ZONE)).date().isoformat()
    with fanout_bench.PlanServer(
        PLAN_TOKENS, limit_headers=side.headers, profile=PACE, time_scale=SCALE, seed=5, rate_limit=side.account
    ) as server:
        environment = {**model_environment(server.base_url, SCALE, waits_scaled=True), **container_environment(SCALE)}
        environ = {**os.environ, "AI_AGENT_MODE": "openai", "AWS_DEFAULT_REGION": "us-east-1"}
        with LocalRunner(template=template, environ=environ, parameter_overrides=parameters) as runner:
            dynamodb = runner.aws.client("dynamodb")
            users = [f"user-{n:04d}" for n in range(USERS)]
            put_profiles(dynamodb, *(fanout_bench.profile(user) for user in users))
            for user in users:
                runner.send_message("NudgeQueue", json.dumps({"userId": user, "localDate": local_date}))
            report = runner.drain_like_lambda("NudgeQueue", time_limit_s=3600 * SCALE, env_overrides=environment)
            pages = dynamodb.get_paginator("scan").paginate(
                TableName="SchedulesTable",
                FilterExpression="begins_with(sk, :schedule)",
                ExpressionAttributeValues={":schedule": {"S": "SCHEDULE#"}},
            )
            schedules = [item for page in pages for item in page["Items"]]
        ledger = list(server.billing)
    side.fallbacks = sum(1 for item in schedules if item["fallbackUsed"]["BOOL"])
    side.served = len(schedules) - side.fallbacks
    side.dead_lettered = report.moved_to_dead_letter_queue + report.left_in_queue
    side.refused = sum(1 for record in ledger if record.ended == "rate_limited")
    side.deferred = report.failed_deliveries
    answered = [record for record in ledger if record.ended == "complete"]
    if answered:
        first = min(record.started_at for record in ledger)
        side.drain_s = (max(record.started_at + record.seconds for record in answered) - first) / SCALE
        side.answer_s = statistics.mean(record.seconds for record in answered) / SCALE
    side.runner_s = report.seconds / SCALE
    print(f"{side.name}: {report.summary()}", file=sys.stderr, flush=True)
    return side


def main() -> None:
    scale_product(SCALE)
    sides = [
        run(Side("limit set (ProviderRequestsPerMinute=20)", configured=True)),
        run(Side("limit not set: x-ratelimit headers on every answer", configured=False)),
        run(Side("limit not set: x-ratelimit headers only with 429s", configured=False, headers="refusals")),
        run(Side("limit not set, no x-ratelimit headers at all (nothing to learn)", configured=False, headers=False)),
    ]
    floor = run(Side("no limit that binds (the floor)", configured=False, account=DEFAULT_ACCOUNT))
    unscale_product()
    answer_s = statistics.mean(side.answer_s for side in sides if side.answer_s)
    after_first_s = (USERS - ACCOUNT.requests_per_minute) * 60.0 / ACCOUNT.requests_per_minute
    bound_s = after_first_s + answer_s
    runner_bound_s = floor.runner_s + after_first_s
    print(
        f"## {USERS} users drained through the local runner against an account of {ACCOUNT.requests_per_minute} "
        f"requests a minute ({PLAN_TOKENS:,}-token plans at {PACE.name}, the template's share 0.8 and 5 containers)\n"
    )
    print(
        f"bound: what the limit allows = {USERS - ACCOUNT.requests_per_minute} requests after the first "
        f"{ACCOUNT.requests_per_minute} at one every {60 / ACCOUNT.requests_per_minute:.0f} s + an answer's "
        f"{answer_s:.1f} s = {bound_s:.1f} s; goal: within {GOAL}x ({GOAL * bound_s:.1f} s). Through the runner: "
        f"the floor's {floor.runner_s:.1f} s + {after_first_s:.0f} s = {runner_bound_s:.1f} s\n"
    )
    print(
        "| side | served by the model | fallbacks | dead-lettered | 429s | deliveries deferred "
        "| first request to last answer (s) | x bound | drain through the runner (s) | x its bound |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for side in [*sides, floor]:
        print(side.row(bound_s, runner_bound_s))


if __name__ == "__main__":
    benchmark_arguments(
        __file__,
        __doc__,
        settings={
            "LEARNED_LIMITS_BENCH_SCALE": "the model's and the product's delays as a share of real seconds (1.0)"
        },
    )
    main()
