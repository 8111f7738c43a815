"""Nudge benchmarks, in process on moto, each against a baseline
measured in the same run:

How it runs, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Bench")
os.environ["POWERTOOLS_LOG_LEVEL"] = "WARNING"
for _name in ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL"):
    os.environ.pop(_name, None)

import boto3  # noqa: E402 - after the environment above
from moto import mock_aws  # noqa: E402

from benchmarks.command_line import benchmark_arguments  # noqa: E402
from devtools.template import create_tables  # noqa: E402

# The benchmark's sizes; override with NUDGES_BENCH_USERS / NUDGES_BENCH_SCHEDULES for a quick run
# (moto in process is slow: the full run takes a few minutes).
USERS = int(os.environ.get("NUDGES_BENCH_USERS", "1000"))
SCHEDULES = int(os.environ.get("NUDGES_BENCH_SCHEDULES", "10000"))
PENDING = 20
# The generator takes only dates near a user's today (the users live in Tokyo).
TOKYO_TODAY = datetime.now(ZoneInfo("Asia/Tokyo")).date()
DATE = TOKYO_TODAY.isoformat()
WARM_UP_DATE = (TOKYO_TODAY - timedelta(days=1)).isoformat()
PROBLEMS = ["staying_up_late"]  # 6 slots


class ZeroLatencyModel:
    """Answers instantly with one valid answer per slot count (the offline model's, precomputed)."""

    def __init__(self) -> None:
        from lambda_agents.llm import ChatResponse, Usage
        from lambda_agents.llm.offline_model import OfflineModel, sample

        self._sample = sample
        self._response = ChatResponse
        self._usage = Usage(800, 600)
        self._answers: dict[int, str] = {}
        self._offline = OfflineModel()

    @property
    def model_name(self) -> str:
        return "zero-latency"

    def complete(self, request: Any) -> Any:
        key = request.hints.output_schema["properties"]["appNudges"]["minItems"]
        if key not in self._answers:
            self._answers[key] = json.dumps(self._sample(request.hints.output_schema, "en"))
        return self._response(self._answers[key], "stop", usage=self._usage, model="zero-latency")


def _tables() -> Any:
    client = boto3.client("dynamodb")
    create_tables(client, ["UsersTable", "SchedulesTable", "NudgeIdempotencyTable"])
    return client


@contextlib.contextmanager
def without_moto_transaction_snapshot() -> Iterator[None]:
    """moto deep-copies the whole target table once per item of a TransactWriteItems (its
    rollback snapshot), which makes a transaction O(table size) in moto only; real DynamoDB
    has no such cost. The snapshot is only read when a transaction fails, which the benchmark
    asserts never happens, so it is skipped here (tests keep moto's behaviour)."""
    from moto.dynamodb import models
    from moto.dynamodb.models.table import Table

    real = models.copy

    class _Copy:
        @staticmethod
        def deepcopy(value: Any, memo: Any = None) -> Any:
            return value if isinstance(value, Table) else real.deepcopy(value, memo)

    models.copy = _Copy  # type: ignore[assignment]
    try:
        yield
    finally:
        models.copy = real


def _reset_caches() -> None:
    from lambda_agents.storage.dynamodb import dynamodb_resource

    dynamodb_resource.cache_clear()


def bench_generator() -> list[tuple[str, float, float]]:
    from lambda_agents.nudges.generation import GenerationJob, NudgeGenerationService
    from lambda_agents.nudges.profile import UserProfile
    from lambda_agents.storage.dynamodb import table, to_dynamo
    from lambda_agents.storage.nudges import DynamoScheduleRepository
    from lambda_agents.storage.users import DynamoUserRepository

    rows: list[tuple[str, float, float]] = []
    with mock_aws(), without_moto_transaction_snapshot():
        _reset_caches()
        _tables()
        users = DynamoUserRepository("UsersTable")
        for index in range(USERS):
            users.put(UserProfile(user_id=f"u{index:05d}", problems=tuple(PROBLEMS), timezone="Asia/Tokyo"))
        schedules = DynamoScheduleRepository("SchedulesTable")
        service = NudgeGenerationService(users, schedules, ZeroLatencyModel(), sleep=lambda _: None)
        service.generate(GenerationJob(userId="u00000", localDate=WARM_UP_DATE))  # warm caches
        started = time.perf_counter()
        for index in range(USERS):
            outcome = service.generate(GenerationJob(userId=f"u{index:05d}", localDate=DATE))
            assert outcome.status == "generated" and outcome.nudges_enabled == 6
        service_s = (time.perf_counter() - started) / USERS
        # Baseline, same run: one plain put_item of the very schedule item per user.
        sample = schedules.get("u00000", DATE)
        assert sample is not None
        plain = table("SchedulesTable")
        started = time.perf_counter()
        for index in range(USERS):
            item = {**sample, "pk": f"BASE#{index}", "sk": "SCHEDULE#" + DATE}
            plain.put_item(Item=to_dynamo(item))
        baseline_s = (time.perf_counter() - started) / USERS
    with mock_aws(), without_moto_transaction_snapshot():
        _reset_caches()
        handler_s = _bench_handler()
    rows.append(("baseline: one put_item per user", baseline_s * 1000, 1.0))
    rows.append(("generation service per user", service_s * 1000, service_s / baseline_s))
    rows.append(("handler per user (+ idempotency, batch)", handler_s * 1000, handler_s / baseline_s))
    return rows


def _bench_handler() -> float:
    from lambda_agents.nudges.profile import UserProfile
    from lambda_agents.storage.users import DynamoUserRepository

    from devtools.runner_lambda import LambdaContext

    _tables()
    queue_url = boto3.client("sqs").create_queue(QueueName="NudgeQueue")["QueueUrl"]  # deferrals return here
    os.environ.update(
        {
            "USERS_TABLE": "UsersTable",
            "SCHEDULES_TABLE": "SchedulesTable",
            "IDEMPOTENCY_TABLE": "NudgeIdempotencyTable",
            "NUDGE_QUEUE_URL": queue_url,
            "AI_AGENT_MODE": "mock",
        }
    )
    import functions.nudge_generator.app as generator

    generator.dependencies.rebuild(model=ZeroLatencyModel())
    users = DynamoUserRepository("UsersTable")
    for index in range(USERS):
        users.put(UserProfile(user_id=f"h{index:05d}", problems=tuple(PROBLEMS), timezone="Asia/Tokyo"))
    batches = []
    for start in range(0, USERS, 10):
        records = [
            {
                "messageId": f"m{index}",
                "receiptHandle": f"r{index}",
                "body": json.dumps({"userId": f"h{index:05d}", "localDate": DATE}),
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:NudgeQueue",
                "awsRegion": "us-east-1",
            }
            for index in range(start, start + 10)
        ]
        batches.append({"Records": records})
    import io

    context = LambdaContext("NudgeGeneratorFunction", 512, "arn:aws:lambda:us-east-1:1:function:g", "bench", 900)
    with contextlib.redirect_stdout(io.StringIO()):  # metrics lines
        started = time.perf_counter()
        for event in batches:
            result = generator.lambda_handler(event, context)
            assert result == {"batchItemFailures": []}, result
        elapsed = time.perf_counter() - started
    generator.dependencies.reset()
    return elapsed / USERS


def bench_pending() -> list[tuple[str, int, int, float]]:
    from lambda_agents.nudges.pending import PendingFilter, PendingPostsQuery
    from lambda_agents.nudges.records import ScheduleRecord
    from lambda_agents.storage.dynamodb import table, to_dynamo
    from lambda_agents.storage.nudges import DynamoPendingPostsStore, post_item, schedule_item

    with mock_aws():
        _reset_caches()
        _tables()
        created = datetime(2026, 2, 1, tzinfo=UTC).isoformat()
        target = table("SchedulesTable")
        output = {
            "appNudges": [],
            "tiktokPosts": [
                {"slot": s, "caption": "c", "hashtags": [], "tone": "gentle", "reasoning": "r", "enabled": True}
                for s in ("morning", "evening")
            ],
            "xPosts": [{"slot": s, "text": "t", "reasoning": "r", "enabled": True} for s in ("morning", "evening")],
        }
        with target.batch_writer() as writer:
            for index in range(SCHEDULES):
                record = ScheduleRecord(
                    f"s{index:05d}", DATE, "Asia/Tokyo", "en", "1", [], output, False, None, [], {}, "m", created
                )
                writer.put_item(Item=to_dynamo({k: v for k, v in schedule_item(record, 30).items() if v is not None}))
                for post in record.posts():
                    item = post_item(post, created, 30)
                    # All but PENDING TikTok posts are already published (what a day later looks like).
                    if not (post.platform == "tiktok" and post.slot == "morning" and index < PENDING):
                        item.pop("pendingKey", None)
                        item.pop("pendingSort", None)
                        item["status"] = "posted"
                    writer.put_item(Item=to_dynamo(item))
        query = PendingPostsQuery(DynamoPendingPostsStore("SchedulesTable"))
        started = time.perf_counter()
        result = query.run("tiktok", PendingFilter(local_date=DATE, limit=100))
        index_s = time.perf_counter() - started
        assert len(result.posts) == PENDING
        started = time.perf_counter()
        scanned, found, kwargs = 0, 0, {}
        while True:
            page = target.scan(**kwargs)
            scanned += page["ScannedCount"]
            found += sum(
                1
                for item in page["Items"]
                if item.get("sk", "").startswith("SCHEDULE#")
                for post in item.get("agentRawOutput", {}).get("tiktokPosts", [])
                if post.get("enabled") is not False
            )
            if "LastEvaluatedKey" not in page:
                break
            kwargs = {"ExclusiveStartKey": page["LastEvaluatedKey"]}
        scan_s = time.perf_counter() - started
        del found  # a scan of schedules cannot even tell published posts apart: it finds all 20,000
    return [
        ("PendingPostsIndex query (this design)", result.items_read, len(result.posts), index_s * 1000),
        ("Scan of the table (load and filter)", scanned, PENDING, scan_s * 1000),
    ]


def main() -> None:
    started = time.perf_counter()
    generator_rows = bench_generator()
    print(f"generator overhead per user, {USERS} users, zero-latency model, moto in process (6 slots each)")
    print(f"{'path':<44}{'ms/user':>9}{'x baseline':>12}")
    for name, ms, ratio in generator_rows:
        print(f"{name:<44}{ms:>9.2f}{ratio:>12.2f}")
    print("target: generation service within 3.00x baseline")
    print()
    pending_rows = bench_pending()
    stored = f"{SCHEDULES} schedules, {SCHEDULES * 4} post records, {PENDING} pending"
    print(f"items read by GET /api/admin/tiktok/pending: {stored}")
    print(f"{'read':<44}{'items read':>11}{'returned':>10}{'ms':>9}")
    for name, read, returned, ms in pending_rows:
        print(f"{name:<44}{read:>11}{returned:>10}{ms:>9.1f}")
    ratio = pending_rows[1][1] / max(1, pending_rows[0][1])
    print(f"the index reads {ratio:.0f}x fewer items (target: about {PENDING} items)")
    print(f"({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    benchmark_arguments(
        __file__,
        __doc__,
        settings={
            "NUDGES_BENCH_USERS": "users of the scheduler run (1000)",
            "NUDGES_BENCH_SCHEDULES": "stored schedules (10000)",
        },
    )
    main()
