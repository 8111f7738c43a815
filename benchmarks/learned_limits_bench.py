"""The fan-out under a provider limit nobody configured: what the containers learn from the
provider's headers, and how close the drain comes to what the limit allows.

Forty users due in one hour are queued for their nudges and drained through the local runner as
Lambda drains the queue (``LocalRunner.drain_like_lambda``: the template's generator in container
processes of its own, batches of 10 served at once, at most ``NudgeGeneratorConcurrency`` batches
at once, a failed or deferred message back only after its visibility timeout, the real openai
client), against the fake provider writing plans of 3,000 tokens at 300 tokens/s (first token
0.2-1.2 s: ~10.7 s a plan) for an account of 20 requests a minute. The product is told nothing of
the model's pace (its defaults: 60 tokens/s, a first token in 1.2 s); the template's defaults
otherwise: the fan-out's share 0.8, five containers.

Four sides, the same code, queue and account:

- **limit set** (``ProviderRequestsPerMinute=20``): each container paces to its share from the start,
  and follows the account's headers up to the function's whole share;
- **limit not set, headers on every answer** (the template's default 0, OpenAI's way): the first
  answers' and 429s' ``x-ratelimit-*`` headers teach each container the limit, and from then on its
  budget follows the account (``llm/rate_budget.py``);
- **limit not set, headers only with 429s**: a provider that states its limit only when it refuses,
  so nothing but its refusals and the answers it takes tell the containers the account's room;
- **limit not set, no headers at all**: nothing can be learned: 429s as they come, retried, deferred.

The bound is what the limit allows: the account's first 20 requests at once, then one every 3 s,
so the 40th leaves at 60 s, plus an answer's time (the mean measured in the same run); the goal is
1.25x of it. It is read on the provider's ledger, from the first request to the last answer. The
drain's whole time through the runner adds the containers' cold starts, the batching window and
shutting them down: its bound is the same 60 s after a fifth side, the same drain against an
account whose limit never binds. Printed per side: served by the model, fallbacks, dead-lettered,
429s, deliveries deferred, and both times against their bounds.

``LEARNED_LIMITS_BENCH_SCALE`` (1.0: real seconds) runs the model and every delay of the product
that much faster.
"""

from __future__ import annotations

import copy
import json
import os
import statistics
import sys
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from zoneinfo import ZoneInfo

os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Bench")
os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from lambda_agents.llm.offline_model import sample
from lambda_agents.llm.schema import model_schema
from lambda_agents.nudges.schema import create_agent_output_model

from benchmarks import fanout_bench
from benchmarks.command_line import benchmark_arguments
from devtools.fake_openai import DEFAULT_ACCOUNT, FakeOpenAIServer, RateLimit, Reply, SpeedProfile, Step

SCALE = float(os.environ.get("LEARNED_LIMITS_BENCH_SCALE", "1.0"))
USERS = 40
ACCOUNT = RateLimit(requests_per_minute=20, tokens_per_minute=2_000_000)  # the requests bind
PLAN_TOKENS = 3_000
# A fast model: a first token within 0.2-1.2 s, then 300 tokens/s, so a plan takes ~10.7 s.
PACE = SpeedProfile("300 tokens/s", (0.2, 1.2), (300.0, 300.0, 300.0))
PRODUCT_TOKENS_PER_S = 60.0  # what the product assumes of a model it was told nothing about
GOAL = 1.25  # x the bound: a learned limit may take at most this much longer than the limit allows


class PlanProvider(FakeOpenAIServer):
    """Answers every request with a schema-valid 15-slot plan that costs ``PLAN_TOKENS``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        content = json.dumps(sample(model_schema(create_agent_output_model(15)), "en"))
        self._plan = Reply(content=content, needs_tokens=PLAN_TOKENS)

    def _next_step(self, body: dict[str, Any]) -> Step | None:
        return self._plan


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
    from devtools.runner import LocalRunner
    from devtools.runner_container import PRELOAD
    from devtools.template import load_template

    template = copy.deepcopy(load_template())
    resources = template["Resources"]
    generator = resources["NudgeGeneratorFunction"]["Properties"]
    generator["Timeout"] = max(1, round(300 * SCALE))
    source = generator["Events"]["Queue"]["Properties"]
    source["MaximumBatchingWindowInSeconds"] = source["MaximumBatchingWindowInSeconds"] * SCALE
    resources["NudgeQueue"]["Properties"]["VisibilityTimeout"] = max(1, round(1800 * SCALE))
    parameters = {
        "ProviderRequestsPerMinute": str(ACCOUNT.requests_per_minute if side.configured else 0),
        "ProviderTokensPerMinute": str(ACCOUNT.tokens_per_minute if side.configured else 0),
    }
    local_date = datetime.now(ZoneInfo(fanout_bench.ZONE)).date().isoformat()
    with PlanProvider(
        limit_headers=side.headers, profile=PACE, time_scale=SCALE, seed=5, rate_limit=side.account
    ) as server:
        environment = {
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "bench",
            "OPENAI_MODEL": "gpt-4o",
            "OPENAI_CONNECT_TIMEOUT_SECONDS": str(5.0 * SCALE),
            "OPENAI_FIRST_TOKEN_TIMEOUT_SECONDS": str(30.0 * SCALE),
            "OPENAI_STALL_TIMEOUT_SECONDS": str(15.0 * SCALE),
            "OPENAI_FIRST_TOKEN_SECONDS": str(1.2 * SCALE),
            "OPENAI_TOKENS_PER_SECOND": str(PRODUCT_TOKENS_PER_S / SCALE),
            "OPENAI_BREAKER_COOLDOWN_SECONDS": str(30.0 * SCALE),
            "POWERTOOLS_LOG_LEVEL": "ERROR",
            "LEARNED_LIMITS_BENCH_SCALE": str(SCALE),
            PRELOAD: "benchmarks.learned_limits_bench:scale_product",
        }
        environ = {**os.environ, "AI_AGENT_MODE": "openai", "AWS_DEFAULT_REGION": "us-east-1"}
        with LocalRunner(template=template, environ=environ, parameter_overrides=parameters) as runner:
            dynamodb = runner.aws.client("dynamodb")
            users = [f"user-{n:04d}" for n in range(USERS)]
            for user in users:
                dynamodb.put_item(TableName="UsersTable", Item=fanout_bench._user_item(user))
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


def scale_product() -> None:
    """The product's delays in the model's time: the fan-out benchmark's scaling, at this scale
    (the runner's containers call it too, ``RUNNER_CONTAINER_PRELOAD``)."""
    fanout_bench.SCALE = SCALE
    fanout_bench.scale_product()


def main() -> None:
    scale_product()
    sides = [
        run(Side("limit set (ProviderRequestsPerMinute=20)", configured=True)),
        run(Side("limit not set: x-ratelimit headers on every answer", configured=False)),
        run(Side("limit not set: x-ratelimit headers only with 429s", configured=False, headers="refusals")),
        run(Side("limit not set, no x-ratelimit headers at all (nothing to learn)", configured=False, headers=False)),
    ]
    floor = run(Side("no limit that binds (the floor)", configured=False, account=DEFAULT_ACCOUNT))
    fanout_bench.unscale_product()
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
