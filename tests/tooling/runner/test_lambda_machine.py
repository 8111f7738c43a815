"""Spec: code in the local runner's functions sees Lambda's machine, not this one. A
function's container reports the vCPUs Lambda gives its memory (``os.cpu_count()``,
``os.process_cpu_count()``, and the thread pools sized by them), so concurrency sized by the
machine shows here as deployed: one SQS batch of ten users, at a real model's pace, has all ten of
its plans generated at once by the template's generator (512 MB: 2 vCPUs, where asyncio's default
executor would run six)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from lambda_agents.llm.offline_model import sample
from lambda_agents.llm.schema import model_schema
from lambda_agents.nudges.profile import UserProfile
from lambda_agents.nudges.schema import create_agent_output_model

from devtools.fake_openai import FakeOpenAIServer, Reply
from devtools.local_aws import put_profiles
from devtools.runner import LocalRunner
from devtools.runner_lambda import InProcessLambda, import_handler_from, lambda_vcpus
from devtools.runner_queues import ContainerProcess
from devtools.runner_template import FunctionSpec
from devtools.template import ROOT
from devtools.time_scale import model_environment

pytestmark = pytest.mark.integration

PROBE = FunctionSpec("CpuProbeFunction", "tests/tooling/runner/cpu_probe/", "app.lambda_handler", 30, 512)


@pytest.mark.parametrize(("memory_mb", "vcpus"), [(128, 2), (512, 2), (3008, 2), (3009, 3), (7076, 4), (10240, 6)])
def test_lambda_shows_two_vcpus_up_to_3008_mb_then_one_more_per_step_up_to_six(memory_mb: int, vcpus: int) -> None:
    assert lambda_vcpus(memory_mb) == vcpus


@pytest.mark.parametrize("memory_mb", [127, 10241])
def test_a_memory_size_lambda_does_not_offer_is_refused(memory_mb: int) -> None:
    with pytest.raises(ValueError, match="outside Lambda's 128-10240 MB"):
        lambda_vcpus(memory_mb)


def expected(vcpus: int) -> dict[str, int]:
    """What Python 3.13 shows on ``vcpus``: both counts, and pools of min(32, vcpus + 4) threads."""
    return {"cpu_count": vcpus, "process_cpu_count": vcpus, "thread_pool": vcpus + 4, "to_thread": vcpus + 4}


@pytest.mark.parametrize(("memory_mb", "vcpus"), [(512, 2), (10240, 6)])
def test_a_container_process_reports_the_vcpus_lambda_gives_its_memory(memory_mb: int, vcpus: int) -> None:
    container = ContainerProcess(FunctionSpec(**{**PROBE.__dict__, "memory_mb": memory_mb}), {}, "us-east-1")
    try:
        outcome = container.invoke({})
    finally:
        container.close()

    assert outcome["result"] == expected(vcpus)


@pytest.mark.parametrize(("memory_mb", "vcpus"), [(512, 2), (10240, 6)])
def test_an_in_process_invocation_reports_them_too_and_leaves_the_process_its_own(memory_mb: int, vcpus: int) -> None:
    import os

    machine = os.cpu_count()
    invoker = InProcessLambda(import_handler_from(ROOT), "us-east-1")

    result = invoker.invoke(FunctionSpec(**{**PROBE.__dict__, "memory_mb": memory_mb}), {}, {})

    assert result == expected(vcpus)
    assert os.cpu_count() == machine


# -- the generator's batch at a real model's pace ----------------------------------------------------

SCALE = 0.05  # 20x faster than the model: a 3,000-token plan at 60 tokens/s takes 50 s, here 2.5 s
BATCH = 10  # NudgeQueue's BatchSize
PLAN_TOKENS = 3000
PROBLEMS = ("staying_up_late", "procrastination", "anxiety")  # 15 slots


def plan() -> Reply:
    """A schema-valid 15-slot plan that costs a real plan's 3,000 tokens, at gpt-4o's typical pace."""
    content = json.dumps(sample(model_schema(create_agent_output_model(15)), "en"))
    return Reply(content=content, needs_tokens=PLAN_TOKENS, first_token_s=0.5, tokens_per_s=60.0)


@pytest.fixture
def runner() -> Iterator[LocalRunner]:
    with LocalRunner(environ={"AWS_DEFAULT_REGION": "us-east-1"}) as local:
        yield local
        local.aws.reset()


def test_one_sqs_batch_of_ten_users_has_all_ten_plans_generated_at_once_at_a_real_models_pace(
    runner: LocalRunner,
) -> None:
    today = datetime.now(ZoneInfo("Asia/Tokyo")).date().isoformat()
    users = [f"batch-{n}" for n in range(BATCH)]
    dynamodb = runner.aws.client("dynamodb")
    for user in users:
        put_profiles(dynamodb, UserProfile(user_id=user, problems=PROBLEMS, timezone="Asia/Tokyo"))
        runner.send_message("NudgeQueue", json.dumps({"userId": user, "localDate": today}))

    # A chunk at most every 50 ms (the tokens due since the last together): one every 5 ms at the
    # scaled pace is 2,000 chunks a second to read, which a busy machine falls behind.
    with FakeOpenAIServer(time_scale=SCALE, chunk_interval_s=0.05) as server:
        server.enqueue(*(plan() for _ in users))
        report = runner.drain_like_lambda(
            "NudgeQueue", time_limit_s=120, env_overrides=model_environment(server.base_url, SCALE)
        )

    assert report.batch_sizes == [BATCH] and report.succeeded == BATCH, report.summary()
    assert [record.ended for record in server.billing] == ["complete"] * BATCH
    assert server.most_at_once() == BATCH  # every plan of the batch was being written at once
    schedules = dynamodb.scan(
        TableName="SchedulesTable",
        FilterExpression="begins_with(sk, :schedule)",
        ExpressionAttributeValues={":schedule": {"S": "SCHEDULE#"}},
    )["Items"]
    assert sorted(item["fallbackUsed"]["BOOL"] for item in schedules) == [False] * BATCH  # all by the model
