"""The generator function end to end on moto: partial batch failures, duplicate delivery,
the dead-letter path, and the scheduler's fan-out by timezone."""

from __future__ import annotations

import json

import pytest
from lambda_agents.llm.offline_model import sample
from lambda_agents.llm.schema import model_schema
from lambda_agents.nudges.schedule_event import InvalidScheduleEvent
from lambda_agents.nudges.schema import create_agent_output_model
from lambda_agents.storage.nudges import DynamoScheduleRepository

from devtools.fake_openai import FakeOpenAIServer, Reply
from functions.nudge_generator import app as generator_app
from functions.nudge_scheduler import app as scheduler_app

from .conftest import MAX_RECEIVES, TODAY, Aws, context, generate, sqs_event, use_fake_openai

pytestmark = pytest.mark.integration


def schedule(user_id: str, local_date: str = TODAY) -> dict | None:  # type: ignore[type-arg]
    return DynamoScheduleRepository("SchedulesTable").get(user_id, local_date)


def valid_reply(slot_count: int) -> Reply:
    """A schema-valid answer written by the offline model (it honours x-index for slotIndex)."""
    return Reply(content=json.dumps(sample(model_schema(create_agent_output_model(slot_count)), "en")))


def test_a_batch_generates_one_schedule_per_user(aws: Aws) -> None:
    aws.add_user(userId="ja-6", preferredLanguage="ja", problems=["staying_up_late"])
    aws.add_user(userId="en-15", problems=["staying_up_late", "procrastination", "anxiety"])
    result = generate({"userId": "ja-6", "localDate": TODAY}, {"userId": "en-15", "localDate": TODAY})
    assert result == {"batchItemFailures": []}
    ja, en = schedule("ja-6"), schedule("en-15")
    assert ja is not None and en is not None
    assert (ja["slotCount"], len(ja["agentRawOutput"]["appNudges"]), ja["language"]) == (6, 6, "ja")
    assert (en["slotCount"], len(en["agentRawOutput"]["appNudges"]), en["language"]) == (15, 15, "en")
    assert ja["fallbackUsed"] is False and ja["model"] == "offline-mock" and ja["expiresAt"] > 0


def test_a_failing_user_fails_only_its_own_record(aws: Aws) -> None:
    aws.add_user(userId="ok")
    aws.dynamodb.put_item(TableName="UsersTable", Item={"userId": {"S": "broken"}, "timezone": {"S": "Mars/Olympus"}})
    result = generate(
        {"userId": "ok", "localDate": TODAY},
        {"userId": "broken", "localDate": TODAY},
        "not json",
    )
    failures = sorted(item["itemIdentifier"] for item in result["batchItemFailures"])  # the records ran at once
    assert failures == ["m1", "m2"]
    assert schedule("ok") is not None and schedule("broken") is None


def test_a_duplicate_delivery_makes_no_second_llm_call_and_no_second_schedule(
    aws: Aws, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_openai(monkeypatch, fake_openai.base_url)
    aws.add_user(userId="dup", problems=["self_loathing"])
    fake_openai.enqueue(valid_reply(4))
    job = {"userId": "dup", "localDate": TODAY}
    first = generate(job, job)  # the same message twice in one batch
    second = generate(job)  # and redelivered later
    assert first == second == {"batchItemFailures": []}
    assert len(fake_openai.requests) == 1
    items = aws.dynamodb.scan(TableName="SchedulesTable")["Items"]
    assert sum(1 for item in items if item["sk"]["S"].startswith("SCHEDULE#")) == 1
    assert sum(1 for item in items if item["sk"]["S"] == "POST") == 4


def test_a_poison_message_reaches_the_dead_letter_queue_after_its_last_receive(aws: Aws) -> None:
    aws.add_user(userId="fine")
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=json.dumps({"userId": "fine", "localDate": TODAY}))
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=json.dumps({"userId": "x", "localDate": "tomorrow"}))
    for _ in range(MAX_RECEIVES + 2):
        messages = aws.sqs.receive_message(QueueUrl=aws.queue_url, MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            continue
        event = sqs_event(*(m["Body"] for m in messages), ids=[m["MessageId"] for m in messages])
        failed = {f["itemIdentifier"] for f in generator_app.lambda_handler(event, context())["batchItemFailures"]}
        for message in messages:
            if message["MessageId"] not in failed:
                aws.sqs.delete_message(QueueUrl=aws.queue_url, ReceiptHandle=message["ReceiptHandle"])
    dead = aws.sqs.receive_message(QueueUrl=aws.dlq_url, MaxNumberOfMessages=10).get("Messages", [])
    assert [json.loads(m["Body"])["localDate"] for m in dead] == ["tomorrow"]
    assert schedule("fine") is not None


def test_too_little_time_is_the_models_pace_not_a_fixed_figure(
    aws: Aws, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """10 s of Lambda (7 s for the model) is enough for the offline model, not for a plan at 60 tokens/s:
    that record is deferred to a redelivery, nothing stored, no model call."""
    aws.add_user(userId="instant")
    aws.add_user(userId="real-pace")
    offline = generator_app.lambda_handler(sqs_event({"userId": "instant", "localDate": TODAY}), context(timeout_s=10))
    assert offline == {"batchItemFailures": []} and schedule("instant") is not None

    use_fake_openai(monkeypatch, fake_openai.base_url)
    monkeypatch.setenv("OPENAI_TOKENS_PER_SECOND", "60")
    generator_app.dependencies.reset()
    late = generator_app.lambda_handler(sqs_event({"userId": "real-pace", "localDate": TODAY}), context(timeout_s=10))
    assert late == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
    assert schedule("real-pace") is None and fake_openai.requests == []


def test_the_scheduler_queues_due_users_for_their_local_date_in_pages(aws: Aws) -> None:
    for index in range(1100):
        aws.add_user(userId=f"tokyo-{index:04d}")
    aws.add_user(userId="tokyo-off", nudgesEnabled=False)
    aws.add_user(userId="ny", timezone="America/New_York")
    result = scheduler_app.lambda_handler({"time": "2026-02-01T20:05:00Z"}, context("NudgeSchedulerFunction", 300))
    assert result["queued"] == 1100
    bodies = []
    while True:
        messages = aws.sqs.receive_message(QueueUrl=aws.queue_url, MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            break
        for message in messages:
            bodies.append(json.loads(message["Body"]))
            aws.sqs.delete_message(QueueUrl=aws.queue_url, ReceiptHandle=message["ReceiptHandle"])
    assert len(bodies) == 1100
    assert {b["localDate"] for b in bodies} == {"2026-02-02"}
    assert not any(b["userId"] in {"tokyo-off", "ny"} for b in bodies)


def queued_bodies(aws: Aws) -> list[dict[str, str]]:
    bodies = []
    while messages := aws.sqs.receive_message(QueueUrl=aws.queue_url, MaxNumberOfMessages=10).get("Messages", []):
        for message in messages:
            bodies.append(json.loads(message["Body"]))
            aws.sqs.delete_message(QueueUrl=aws.queue_url, ReceiptHandle=message["ReceiptHandle"])
    return bodies


def test_with_the_providers_limits_the_scheduler_starts_a_cohort_too_large_for_its_window_earlier(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 20 plans a minute (a tiny account), 60 users: ~3.3 minutes of plans, well within 55 minutes.
    monkeypatch.setenv("OPENAI_REQUESTS_PER_MINUTE", "20")
    scheduler_app.dependencies.reset()
    for index in range(60):
        aws.add_user(userId=f"tokyo-{index:02d}")
    aws.add_user(userId="tokyo-off", nudgesEnabled=False)
    before = scheduler_app.lambda_handler({"time": "2026-02-01T19:05:00Z"}, context("NudgeSchedulerFunction", 300))
    assert before["queued"] == 0  # 04:05 in Tokyo: the cohort fits, its hour has not come
    at_hour = scheduler_app.lambda_handler({"time": "2026-02-01T20:05:00Z"}, context("NudgeSchedulerFunction", 300))
    assert at_hour["queued"] == 60 and at_hour["cohorts"] == [
        {"timezone": "Asia/Tokyo", "localDate": "2026-02-02", "leadHours": 0}
    ]
    again = scheduler_app.lambda_handler({"time": "2026-02-01T20:35:00Z"}, context("NudgeSchedulerFunction", 300))
    assert again["queued"] == 0  # marked: a retried run does not queue the cohort twice
    assert len(queued_bodies(aws)) == 60

    # One plan a minute: the 60 users need ~67 minutes paced, more than 05:00 to the first slot at 06:00.
    monkeypatch.setenv("OPENAI_REQUESTS_PER_MINUTE", "1")
    scheduler_app.dependencies.reset()
    runs = {
        hour: scheduler_app.lambda_handler(
            {"time": f"2026-02-02T{hour:02d}:05:00Z"}, context("NudgeSchedulerFunction", 300)
        )
        for hour in range(10, 21)
    }
    started = [hour for hour, run in runs.items() if run["queued"]]
    assert started == [19] and runs[19]["cohorts"][0] == {
        "timezone": "Asia/Tokyo",
        "localDate": "2026-02-03",
        "leadHours": 1,
    }


def test_a_run_emits_fallbacks_by_cause_and_finish_reason_metrics(
    aws: Aws, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_fake_openai(monkeypatch, fake_openai.base_url)
    aws.add_user(userId="refused", problems=["self_loathing"])
    fake_openai.enqueue(Reply(content=None, refusal="no"))
    generate({"userId": "refused", "localDate": TODAY})
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    merged: dict[str, object] = {}
    for line in lines:
        merged.update(line)
    assert merged["NudgeUsersProcessed"] == [1.0] and merged["NudgesGenerated"] == [4.0]
    assert any(line.get("cause") == "refusal" and line.get("NudgeFallbacksByCause") == [1.0] for line in lines)
    assert any(line.get("finishReason") == "stop" for line in lines)  # a refusal arrives with finish_reason stop


def test_a_lost_race_writes_nothing_and_keeps_a_published_post_published(aws: Aws) -> None:
    aws.add_user(userId="race")
    generate({"userId": "race", "localDate": TODAY})
    stored = schedule("race")
    assert stored is not None
    from lambda_agents.nudges.records import ScheduleRecord

    again = ScheduleRecord(
        "race",
        TODAY,
        "Asia/Tokyo",
        "en",
        "",
        [],
        {"appNudges": [], "tiktokPosts": [], "xPosts": []},
        True,
        "refusal",
        [],
        {},
        "m",
        "2026-02-01T00:00:00+00:00",
    )
    assert DynamoScheduleRepository("SchedulesTable").create(again) is False
    assert schedule("race") == stored


@pytest.mark.parametrize("moment", ["9999-12-31T23:59:59Z", "9999-12-31T23:59:59-05:00", "2026-02-01T20:05:00"])
def test_a_schedule_event_far_in_the_future_or_without_a_zone_fails_naming_its_time_and_queues_nothing(
    aws: Aws, moment: str
) -> None:
    aws.add_user(userId="tokyo-1")
    with pytest.raises(InvalidScheduleEvent, match="time"):
        scheduler_app.lambda_handler({"time": moment}, context("NudgeSchedulerFunction", 300))
    assert aws.sqs.receive_message(QueueUrl=aws.queue_url).get("Messages", []) == []


@pytest.mark.parametrize("local_date", ["2020-02-02", "9999-12-31", "0001-01-01"])
def test_a_job_for_a_date_far_from_the_users_today_fails_its_record_and_stores_nothing(
    aws: Aws, local_date: str
) -> None:
    aws.add_user(userId="stale")
    result = generate({"userId": "stale", "localDate": local_date})
    assert len(result["batchItemFailures"]) == 1
    assert schedule("stale", local_date) is None
