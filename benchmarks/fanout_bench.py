"""The nudge fan-out against the provider's rate limit: who is served by the model, what is refused.

How it runs, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

import functools
import json
import os
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Bench")
os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from lambda_agents.llm import Deadline
from lambda_agents.llm.offline_model import sample
from lambda_agents.llm.openai_model import OpenAIChatModel, OpenAIModelSettings
from lambda_agents.llm.policy import StreamTimeouts
from lambda_agents.llm.rate_budget import RateBudget
from lambda_agents.llm.schema import model_schema
from lambda_agents.llm.speeds import CONTAINER_SPEEDS, SpeedEstimate
from lambda_agents.nudges.generation import (
    GenerationDeferred,
    GenerationJob,
    NudgeGenerationService,
)
from lambda_agents.nudges.profile import UserProfile
from lambda_agents.nudges.records import ScheduleRecord
from lambda_agents.nudges.schema import create_agent_output_model

from benchmarks.command_line import benchmark_arguments
from devtools.fake_openai import GPT_4O, FakeOpenAIServer, RateLimit, Reply, Step, prompt_tokens_of, token_limit
from devtools.local_aws import put_profiles
from devtools.time_scale import (
    container_environment,
    model_environment,
    scale_product,
    scaled_template,
    unscale_product,
)

SCALE = float(os.environ.get("FANOUT_BENCH_SCALE", "0.05"))  # 20x faster than the model: a 50 s plan takes 2.5 s
USERS = int(os.environ.get("FANOUT_BENCH_USERS", "150"))
CONTAINERS = 5  # the template's NudgeGeneratorConcurrency
BATCH = 10  # the event source's BatchSize, served at once (NUDGE_BATCH_CONCURRENCY)
INVOCATION_S = 300.0  # the generator's Timeout
VISIBILITY_S = 1800.0  # the queue's visibility timeout: a failed record's return
MAX_RECEIVES = 5  # the queue's maxReceiveCount: the last delivery stores the fallback
SHARE = 0.8  # the template's NudgeRateLimitShare
# An account whose limit binds: ~12 plans a minute (the fake counts a plan's messages and its
# max_tokens, ~4,600), where 50 plans at once would need ~60.
ACCOUNT = RateLimit(requests_per_minute=5_000, tokens_per_minute=60_000)
PLAN_TOKENS = 3_000
PROBLEMS = ("staying_up_late", "procrastination", "anxiety")  # 15 slots: max_tokens 4,095
ZONE = "Asia/Tokyo"


class PlanServer(FakeOpenAIServer):
    """Answers every request with a schema-valid 15-slot plan that costs ``plan_tokens``."""

    def __init__(self, plan_tokens: int = PLAN_TOKENS, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        content = json.dumps(sample(model_schema(create_agent_output_model(15)), "en"))
        self._plan = Reply(content=content, needs_tokens=plan_tokens)

    def _next_step(self, body: dict[str, Any]) -> Step | None:
        return self._plan


def profile(user_id: str) -> UserProfile:
    """One of the fan-out's users: 15 slots in Tokyo."""
    return UserProfile(user_id=user_id, problems=PROBLEMS, timezone=ZONE, app_version="2.4.0")


class Users:
    def get(self, user_id: str) -> UserProfile | None:
        return profile(user_id)


class Schedules:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.stored: dict[str, ScheduleRecord] = {}

    def recent(self, user_id: str, local_date: str, days: int) -> list[dict[str, Any]]:
        return []

    def create(self, record: ScheduleRecord) -> bool:
        with self._lock:
            if record.user_id in self.stored:
                return False
            self.stored[record.user_id] = record
            return True


@dataclass
class Message:
    user_id: str
    receives: int = 0
    visible_at: float = 0.0


@dataclass
class Queue:
    """SQS as the event source sees it: visibility, receive counts, deletes."""

    messages: dict[str, Message]
    lock: threading.Lock = field(default_factory=threading.Lock)

    def receive(self, now: float) -> list[Message]:
        with self.lock:
            batch = [m for m in self.messages.values() if m.visible_at <= now][:BATCH]
            for message in batch:
                message.receives += 1
                message.visible_at = now + VISIBILITY_S * SCALE
            return batch

    def delete(self, message: Message) -> None:
        with self.lock:
            self.messages.pop(message.user_id, None)

    def return_after(self, message: Message, seconds: float) -> None:
        with self.lock:
            message.visible_at = time.monotonic() + seconds

    def empty(self) -> bool:
        with self.lock:
            return not self.messages


@dataclass
class Side:
    name: str
    share: float | None  # the generator's part of the account's limits; None: limits not known
    users: int = USERS
    max_receives: int = MAX_RECEIVES  # the queue's maxReceiveCount: the last delivery stores the fallback
    served: int = 0
    fallbacks: int = 0
    refused: int = 0
    answered: int = 0
    deliveries: list[int] = field(default_factory=list)
    invocation_s: float = 0.0
    minutes: float = 0.0
    plan_cost: float = 0.0

    def row(self) -> str:
        done = max(1, self.served + self.fallbacks)
        deliveries = f"{statistics.mean(self.deliveries):.2f} / {max(self.deliveries)}" if self.deliveries else "-"
        return (
            f"| {self.name} | {self.served}/{self.users} | {self.fallbacks} | {self.refused} | {self.answered} | "
            f"{deliveries} | {self.minutes:.1f} | {self.served / max(self.minutes, 1e-9):.1f} | "
            f"{self.invocation_s / done:.0f} |"
        )


def container_model(server: FakeOpenAIServer, share: float | None) -> OpenAIChatModel:
    budget = None
    if share is not None:
        budget = RateBudget.for_account(
            ACCOUNT.requests_per_minute, ACCOUNT.tokens_per_minute, share=share, containers=CONTAINERS
        )
    return OpenAIChatModel(
        OpenAIModelSettings(
            api_key="bench",
            model="gpt-4o",
            base_url=server.base_url,
            timeouts=StreamTimeouts(connect_s=5.0 * SCALE, first_token_s=30.0 * SCALE, stall_s=15.0 * SCALE),
            speed_prior=SpeedEstimate(first_token_s=1.2 * SCALE, tokens_per_s=60.0 / SCALE),
        ),
        rate_budget=budget,
    )


@dataclass
class Container:
    """One generator container: its own model (and share of the limit), one batch at a time."""

    side: Side
    queue: Queue
    service: NudgeGenerationService
    local_date: str
    lock: threading.Lock

    def run(self, stop: threading.Event) -> None:
        with ThreadPoolExecutor(BATCH) as pool:
            while not stop.is_set():
                batch = self.queue.receive(time.monotonic())
                if not batch:
                    time.sleep(1.0 * SCALE)  # the event source polls again
                    continue
                started = time.monotonic()
                deadline = Deadline.after((INVOCATION_S - 3.0) * SCALE)
                list(pool.map(functools.partial(self.handle, deadline), batch))
                with self.lock:
                    self.side.invocation_s += (time.monotonic() - started) / SCALE

    def handle(self, deadline: Deadline, message: Message) -> None:
        job = GenerationJob(userId=message.user_id, localDate=self.local_date)
        try:
            outcome = self.service.generate(
                job, deadline, may_defer=message.receives < self.side.max_receives, delivery=message.receives
            )
        except GenerationDeferred as deferred:
            self.queue.return_after(message, deferred.retry_in_s)
            return
        with self.lock:
            if outcome.fallback_used:
                self.side.fallbacks += 1
            else:
                self.side.served += 1
            self.side.deliveries.append(message.receives)
        self.queue.delete(message)


def run(side: Side) -> Side:
    CONTAINER_SPEEDS.clear()
    local_date = datetime.now(ZoneInfo(ZONE)).date().isoformat()
    queue = Queue({f"user-{n:04d}": Message(f"user-{n:04d}") for n in range(side.users)})
    lock = threading.Lock()
    with PlanServer(profile=GPT_4O, time_scale=SCALE, seed=5, rate_limit=ACCOUNT) as server:
        stop = threading.Event()
        schedules = Schedules()
        containers = [
            Container(
                side,
                queue,
                NudgeGenerationService(Users(), schedules, container_model(server, side.share)),
                local_date,
                lock,
            )
            for _ in range(CONTAINERS)
        ]
        threads = [threading.Thread(target=c.run, args=(stop,), daemon=True) for c in containers]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        limit = started + 3 * 3600 * SCALE  # bounded: three hours of the model's time
        while not queue.empty() and time.monotonic() < limit:
            time.sleep(0.05)
        side.minutes = (time.monotonic() - started) / SCALE / 60
        stop.set()
        for thread in threads:
            thread.join(timeout=INVOCATION_S * SCALE + 5)
        _read_billing(side, server)
    return side


def _read_billing(side: Side, server: FakeOpenAIServer) -> None:
    """What the provider refused and answered, and what a plan costs against the limit on arrival."""
    ended = [record.ended for record in server.billing]
    side.refused = ended.count("rate_limited")
    side.answered = ended.count("complete")
    costs = [prompt_tokens_of(body) + (token_limit(body) or 0) for body in server.requests]
    side.plan_cost = statistics.mean(costs) if costs else 0.0


def run_like_lambda(side: Side) -> Side:
    """The side through the local runner (``LocalRunner.drain_like_lambda``): the template's
    generator function in container processes of its own, fed by the template's queue and event
    source (batch size, batching window, maximum concurrency, visibility timeout, redrive) on the
    embedded moto server, users and schedules in DynamoDB, the real openai client against the fake
    server. Every time of the template (invocation, visibility, batching window) and of the
    product (``time_scale``, in each container too) is scaled as the server's."""
    from devtools.runner import LocalRunner
    from devtools.template import load_template

    template = scaled_template(load_template(), SCALE)
    resources = template["Resources"]
    generator = resources["NudgeGeneratorFunction"]["Properties"]
    generator["Environment"]["Variables"]["NUDGE_MAX_RECEIVE_COUNT"] = str(side.max_receives)
    resources["NudgeQueue"]["Properties"]["RedrivePolicy"]["maxReceiveCount"] = side.max_receives
    known = side.share is not None
    parameters = {
        "NudgeGeneratorConcurrency": str(CONTAINERS),
        "ProviderRequestsPerMinute": str(ACCOUNT.requests_per_minute if known else 0),
        "ProviderTokensPerMinute": str(ACCOUNT.tokens_per_minute if known else 0),
        "NudgeRateLimitShare": str(side.share or 1.0),
    }
    local_date = datetime.now(ZoneInfo(ZONE)).date().isoformat()
    with PlanServer(profile=GPT_4O, time_scale=SCALE, seed=5, rate_limit=ACCOUNT) as server:
        scaled = {**model_environment(server.base_url, SCALE, waits_scaled=True), **container_environment(SCALE)}
        environ = {**os.environ, "AI_AGENT_MODE": "openai", "AWS_DEFAULT_REGION": "us-east-1"}
        with LocalRunner(template=template, environ=environ, parameter_overrides=parameters) as runner:
            dynamodb = runner.aws.client("dynamodb")
            put_profiles(dynamodb, *(profile(f"user-{n:04d}") for n in range(side.users)))
            for n in range(side.users):
                runner.send_message("NudgeQueue", json.dumps({"userId": f"user-{n:04d}", "localDate": local_date}))
            report = runner.drain_like_lambda("NudgeQueue", time_limit_s=3 * 3600 * SCALE, env_overrides=scaled)
            pages = dynamodb.get_paginator("scan").paginate(
                TableName="SchedulesTable",
                FilterExpression="begins_with(sk, :schedule)",
                ExpressionAttributeValues={":schedule": {"S": "SCHEDULE#"}},
            )
            schedules = [item for page in pages for item in page["Items"]]
        if len(schedules) != side.users or report.left_in_queue or report.moved_to_dead_letter_queue:
            raise RuntimeError(f"{side.name}: {len(schedules)} of {side.users} users stored; {report.summary()}")
        fallbacks = sum(1 for item in schedules if item["fallbackUsed"]["BOOL"])
        side.served, side.fallbacks = len(schedules) - fallbacks, fallbacks
        side.minutes = report.seconds / SCALE / 60
        _read_billing(side, server)
    return side


def main() -> None:
    scale_product(SCALE)
    sides = [
        run(Side("limit not known (429s as they come)", None)),
        run(Side(f"limit known, the template's {SHARE:.0%} share", SHARE)),
        run(Side("limit known, the whole account", 1.0)),
    ]
    unscale_product()
    cost = sides[0].plan_cost
    print(
        f"## Nudge fan-out at the provider's rate limit: {USERS} users, {CONTAINERS} containers x {BATCH} users, "
        f"gpt-4o's pace, plans of {PLAN_TOKENS:,} tokens counted as {cost:,.0f} on arrival; an account of "
        f"{ACCOUNT.tokens_per_minute:,} tokens/min: at most {ACCOUNT.tokens_per_minute / cost:.1f} plans a minute\n"
    )
    print(
        "| side | served by the model | rule-based fallback | 429s | answers | deliveries per user (mean / max) "
        "| minutes to the last user | plans a minute | invocation s per user |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for side in sides:
        print(side.row())


if __name__ == "__main__":
    benchmark_arguments(
        __file__,
        __doc__,
        settings={
            "FANOUT_BENCH_SCALE": "the model's time as a share of real time (0.05: 20x faster)",
            "FANOUT_BENCH_USERS": "users queued (150)",
        },
    )
    main()
