"""Spec: with the Batch API modes, a cohort's next-day plans are made the evening before as a batch
job (the same strict schema and max_tokens as the synchronous call), its answers stored through
the generator's own code, and every user the job did not serve (failed, truncated, refused,
invalid, expired or cancelled) is served at the generation hour: by the synchronous model
(``batch_then_sync``) or by the rule-based fallback (``batch``). Nothing is stored twice, no
answer is paid for twice, and nobody gets a broken plan.

The real openai client talks to the fake server's Files and Batches endpoints; DynamoDB is moto.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

import pytest
from lambda_agents.llm.offline_model import sample
from lambda_agents.llm.schema import model_schema
from lambda_agents.nudges.batch_answers import requested_user
from lambda_agents.nudges.schema import create_agent_output_model
from lambda_agents.nudges.slots import DEFAULT_SCHEDULE_MAP, build_slot_table
from lambda_agents.nudges.tokens import estimate_max_tokens
from lambda_agents.storage.dynamodb import StorageThrottled
from lambda_agents.storage.nudges import DynamoScheduleRepository

from devtools.fake_openai import BatchScript, FakeOpenAIServer, Fault, Reply
from functions.nudge_batches import app as batches_app
from functions.nudge_generator import app as generator_app

from .conftest import Aws, context, sqs_event, use_fake_openai

pytestmark = pytest.mark.integration

ZONE = ZoneInfo("Asia/Tokyo")
PROBLEMS = ["staying_up_late", "procrastination"]
SLOTS = len(build_slot_table(PROBLEMS, DEFAULT_SCHEDULE_MAP))
USERS = ["u-ok", "u-truncated", "u-refused", "u-failed"]
SCALE = 0.001  # the fake's batch clock: a job scripted to take 300 s finishes in 0.3 s


def tomorrow() -> str:
    return (datetime.now(ZONE).date() + timedelta(days=1)).isoformat()


def plan_text() -> str:
    return json.dumps(sample(model_schema(create_agent_output_model(SLOTS)), "en"))


def event(at: datetime | None = None) -> dict[str, Any]:
    at = at or datetime.now(UTC)
    return {"source": "aws.events", "detail-type": "Scheduled Event", "time": at.strftime("%Y-%m-%dT%H:%M:%SZ")}


def run_batches(at: datetime | None = None) -> dict[str, Any]:
    return batches_app.lambda_handler(event(at), context("NudgeBatchFunction", 900))  # type: ignore[no-any-return]


@pytest.fixture
def fake(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(time_scale=SCALE) as server:
        use_fake_openai(monkeypatch, server.base_url)
        hour = datetime.now(ZONE).hour
        monkeypatch.setenv("NUDGE_BATCH_SUBMIT_HOUR", str(hour))  # Tokyo is in its submit hour now
        monkeypatch.setenv("NUDGE_GENERATION_HOUR", str((hour + 3) % 24))
        monkeypatch.setenv("NUDGE_FANOUT_MODE", "batch_then_sync")
        batches_app.dependencies.reset()
        generator_app.dependencies.reset()
        for user in USERS:
            aws.add_user(userId=user, problems=PROBLEMS)
        aws.add_user(userId="u-off", problems=PROBLEMS, nudgesEnabled=False)
        yield server
        batches_app.dependencies.reset()


def script_partial_failures(fake: FakeOpenAIServer, running_s: float = 300, **script: Any) -> None:
    fake.batches.script_next(
        BatchScript(
            running_s=running_s,
            answers={
                "u-ok": Reply(content=plan_text()),
                "u-truncated": Reply(content=plan_text(), needs_tokens=10_000),
                "u-refused": Reply(refusal="I can't help with that."),
                "u-failed": Fault(500),
            },
            key_of=requested_user,
            **script,
        )
    )


def wait_for_the_job(fake: FakeOpenAIServer) -> None:
    """Past a scripted job's end: validating (0.1 s of the fake's time), running (300 s), finalizing (0.1 s)."""
    time.sleep(300.2 * SCALE + 0.05)


def stored(user: str) -> dict[str, Any] | None:
    return DynamoScheduleRepository("SchedulesTable").get(user, tomorrow())


def test_the_evening_job_asks_for_each_enabled_user_what_the_synchronous_call_would(
    aws: Aws, fake: FakeOpenAIServer
) -> None:
    script_partial_failures(fake, running_s=1_000_000)  # still running at the second run

    summary = run_batches()

    [job] = summary["submitted"]
    assert (job["timezone"], job["localDate"], job["requests"]) == ("Asia/Tokyo", tomorrow(), len(USERS))
    assert summary["skippedUsers"] == {}  # u-off (nudges off) is not even listed
    [uploaded] = [f for f in fake.batches.files.values() if f.purpose == "batch"]
    lines = [json.loads(line) for line in uploaded.data.decode().splitlines()]
    assert sorted(requested_user(line["custom_id"]) for line in lines) == sorted(USERS)
    for line in lines:
        body = line["body"]
        assert line["url"] == "/v1/chat/completions" and "stream" not in body
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["strict"] is True
        assert body["max_completion_tokens"] == estimate_max_tokens(SLOTS, 0)
    # A second run in the same hour does not pay for the cohort again.
    again = run_batches()
    assert again["submitted"] == [] and again["stillRunning"] == 1
    assert len(fake.batches.jobs) == 1


def test_usable_answers_are_stored_and_the_rest_are_left_to_the_synchronous_run(
    aws: Aws, fake: FakeOpenAIServer
) -> None:
    script_partial_failures(fake)
    run_batches()
    wait_for_the_job(fake)

    collected = run_batches()

    assert collected["collected"] == {"generated": 1, "answer_unusable": 2, "answer_missing": 1}
    assert collected["unusable"] == {"length": 1, "refusal": 1, "status 500": 1}
    ok = stored("u-ok")
    assert ok is not None and ok["fallbackUsed"] is False and ok["attempts"][0]["plan"] == "batch job"
    assert all(stored(user) is None for user in USERS[1:])
    assert [record.batch for record in fake.billing] == [True, True, True]  # the failed request is not billed

    # At the generation hour the scheduler queues the whole cohort; the generator makes the three
    # missing days with the model and leaves the stored one alone (no second call for it).
    fake.enqueue(*(Reply(content=plan_text()) for _ in USERS[1:]))
    result = generator_app.lambda_handler(
        sqs_event(*({"userId": user, "localDate": tomorrow()} for user in USERS)), context()
    )

    assert result == {"batchItemFailures": []}
    assert all((s := stored(user)) is not None and s["fallbackUsed"] is False for user in USERS)
    assert stored("u-ok") == ok
    synchronous = [record for record in fake.billing if not record.batch]
    assert len(synchronous) == 3
    fake.assert_script_consumed()
    # Collected again (a retried run): nothing changes.
    assert run_batches()["collected"] == {}


def test_without_synchronous_catch_up_the_leftovers_get_the_rule_based_fallback_without_a_model_call(
    aws: Aws, fake: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NUDGE_FANOUT_MODE", "batch")
    generator_app.dependencies.reset()
    script_partial_failures(fake)
    run_batches()
    wait_for_the_job(fake)
    run_batches()

    result = generator_app.lambda_handler(
        sqs_event(*({"userId": user, "localDate": tomorrow()} for user in USERS)), context()
    )

    assert result == {"batchItemFailures": []}
    for user in USERS[1:]:
        day = stored(user)
        assert day is not None and day["fallbackUsed"] is True and day["fallbackReason"] == "no_batch_answer"
        assert len(day["agentRawOutput"]["appNudges"]) == SLOTS
    assert all(record.batch for record in fake.billing)


def test_an_expired_job_gives_the_answers_it_made_and_leaves_the_rest(aws: Aws, fake: FakeOpenAIServer) -> None:
    plans = {user: Reply(content=plan_text()) for user in USERS}
    fake.batches.script_next(BatchScript(running_s=300, answers=plans, expires_after=2, key_of=requested_user))
    run_batches()
    wait_for_the_job(fake)

    collected = run_batches()

    assert collected["collected"] == {"generated": 2, "answer_missing": 2}
    assert collected["unusable"] == {"batch_expired": 2}


def test_a_job_still_running_at_its_cohorts_cut_off_is_cancelled_and_its_answers_so_far_collected(
    aws: Aws, fake: FakeOpenAIServer
) -> None:
    fake.batches.script_next(BatchScript(running_s=1_000_000))
    run_batches()
    cutoff = datetime.fromisoformat(batches_app.dependencies().store.open_batches([tomorrow()])[0].cutoff)

    before = batches_app.dependencies().run(cutoff - timedelta(minutes=15))
    at_cutoff = batches_app.dependencies().run(cutoff + timedelta(minutes=1))
    time.sleep(1.0 * SCALE * 1000 + 0.05)  # the fake's "cancelling" lasts 0.5 s of its clock
    after = batches_app.dependencies().run(cutoff + timedelta(minutes=16))

    assert before.cancelled == [] and before.still_running == 1
    assert len(at_cutoff.cancelled) == 1
    assert sum(after.collected.values()) == len(USERS) and after.unusable == {"batch_cancelled": len(USERS)}


def test_a_job_the_provider_refuses_leaves_its_cohort_to_the_synchronous_path(aws: Aws, fake: FakeOpenAIServer) -> None:
    """The provider validates the file after the create call: the job is accepted, then ``failed``."""
    fake.batches.script_next(BatchScript(refuse="Enqueued token limit reached for gpt-4o."))
    sent = run_batches()
    wait_for_the_job(fake)

    summary = run_batches()

    assert len(sent["submitted"]) == 1 and summary["submitted"] == []
    assert summary["refused"] == [
        {"cohort": f"Asia/Tokyo {tomorrow()}", "why": "invalid_request: Enqueued token limit reached for gpt-4o."}
    ]
    assert run_batches()["refused"] == []  # refused once, not submitted again
    assert len(fake.batches.jobs) == 1


# -- a lost create answer, one job's trouble, cancelling only what runs ----------------------------


@pytest.mark.parametrize("lost", [Fault(500), "closed"], ids=["500-after-accepting", "connection-closed"])
def test_a_job_whose_create_answer_is_lost_is_found_and_collected_and_nobody_is_made_twice(
    aws: Aws, fake: FakeOpenAIServer, lost: Fault | Literal["closed"]
) -> None:
    script_partial_failures(fake, lost_create=lost)
    sent = run_batches()
    wait_for_the_job(fake)
    collected = run_batches()

    [job] = fake.batches.jobs.values()
    assert sent["refused"] == [] and len(sent["jobErrors"]) == 1
    assert [found["batchId"] for found in sent["recovered"]] == [job.id]
    assert job.metadata["cohort"] == f"Asia/Tokyo {tomorrow()}" and job.metadata["claim"]
    assert collected["collected"] == {"generated": 1, "answer_unusable": 2, "answer_missing": 1}
    # At the generation hour only the three the job did not serve are made (one model call each).
    fake.enqueue(*(Reply(content=plan_text()) for _ in USERS[1:]))
    result = generator_app.lambda_handler(
        sqs_event(*({"userId": user, "localDate": tomorrow()} for user in USERS)), context()
    )
    assert result == {"batchItemFailures": []}
    assert len([record for record in fake.billing if record.batch]) == 3
    assert len([record for record in fake.billing if not record.batch]) == 3
    fake.assert_script_consumed()
    assert run_batches()["collected"] == {} and len(fake.batches.jobs) == 1  # never sent, nor collected, twice


def test_a_job_whose_status_call_always_fails_delays_only_itself_and_the_next_cohort_is_sent_on_time(
    aws: Aws, fake: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Brisbane (UTC+10) reaches its submit hour two hours before Singapore (UTC+8)."""
    singapore_hour = datetime.now(ZoneInfo("Asia/Singapore")).hour
    monkeypatch.setenv("NUDGE_BATCH_SUBMIT_HOUR", str(singapore_hour))
    monkeypatch.setenv("NUDGE_GENERATION_HOUR", str((singapore_hour + 3) % 24))
    monkeypatch.setenv("NUDGE_FANOUT_MODE", "batch")
    batches_app.dependencies.reset()
    generator_app.dependencies.reset()
    aws.add_user(userId="bne", problems=PROBLEMS, timezone="Australia/Brisbane")
    aws.add_user(userId="sin", problems=PROBLEMS, timezone="Asia/Singapore")
    fake.batches.script_next(
        BatchScript(status_fault=Fault(500), applies_to=lambda meta: meta["cohort"].startswith("Australia/Brisbane")),
        BatchScript(
            running_s=300,
            answers={"sin": Reply(content=plan_text())},
            key_of=requested_user,
            applies_to=lambda meta: meta["cohort"].startswith("Asia/Singapore"),
        ),
        # Tokyo's cohort (the fixture's users) is due in between: its job runs past this test
        BatchScript(running_s=1_000_000, applies_to=lambda meta: meta["cohort"].startswith("Asia/Tokyo")),
    )
    now = datetime.now(UTC)

    brisbane = run_batches(now - timedelta(hours=2))
    between = run_batches(now - timedelta(hours=1))
    singapore = run_batches(now)
    wait_for_the_job(fake)
    collected = run_batches(now + timedelta(seconds=30))

    [brisbane_job] = brisbane["submitted"]
    assert brisbane_job["timezone"] == "Australia/Brisbane"
    for run in (between, singapore, collected):  # the failing job, counted every run, alone
        [error] = run["jobErrors"]
        assert error["job"] == brisbane_job["batchId"] and error["why"].startswith("provider error (500)")
    assert [job["timezone"] for job in singapore["submitted"]] == ["Asia/Singapore"]
    assert collected["collected"] == {"generated": 1}
    day = DynamoScheduleRepository("SchedulesTable").get("sin", singapore["submitted"][0]["localDate"])
    assert day is not None and day["fallbackUsed"] is False and day["attempts"][0]["plan"] == "batch job"
    # Counted every run with no dimension of its own: deployed, Powertools adds the service (from the
    # template's POWERTOOLS_SERVICE_NAME, unset here), the exact set NudgeBatchJobErrorsAlarm watches.
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    counts = [line for line in emitted if "NudgeBatchJobErrors" in line]
    assert [line["NudgeBatchJobErrors"] for line in counts] == [[0.0], [1.0], [1.0], [1.0]]
    assert all(line["_aws"]["CloudWatchMetrics"][0]["Dimensions"] in ([[]], [["service"]]) for line in counts)


@pytest.mark.parametrize(
    "script",
    [BatchScript(validating_s=1_000_000), BatchScript(running_s=0, finalizing_s=1_000_000)],
    ids=["validating", "finalizing"],
)
def test_a_job_that_is_not_in_progress_at_its_cut_off_is_not_cancelled(
    aws: Aws, fake: FakeOpenAIServer, script: BatchScript
) -> None:
    fake.batches.script_next(script)
    run_batches()
    cutoff = datetime.fromisoformat(batches_app.dependencies().store.open_batches([tomorrow()])[0].cutoff)
    time.sleep(0.01)

    at_cutoff = batches_app.dependencies().run(cutoff + timedelta(minutes=1))

    assert at_cutoff.cancelled == [] and at_cutoff.job_errors == [] and at_cutoff.still_running == 1
    [job] = fake.batches.jobs.values()
    assert job.cancel_at is None


# -- only the job's own answers, each once; one job's storage trouble -------------------------------


def emitted_metrics(capsys: pytest.CaptureFixture[str], name: str) -> list[float]:
    """Every value of ``name`` in the EMF lines the handler printed so far."""
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    return [value for line in lines if name in line for value in line[name]]


def test_lines_that_answer_no_request_of_the_job_store_nothing_and_are_counted_and_logged(
    aws: Aws, fake: FakeOpenAIServer, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """The output file holds an unreadable line, a line written twice, and lines for users the job
    never asked for: one who signed up after 20:00 and one in another zone."""
    script_partial_failures(fake, unreadable_lines=1, duplicated=("u-ok",), unknown_ids=("u-late", "u-london"))
    run_batches()
    aws.add_user(userId="u-late", problems=PROBLEMS)
    aws.add_user(userId="u-london", problems=PROBLEMS, timezone="Europe/London")
    wait_for_the_job(fake)

    collected = run_batches()

    assert collected["collected"] == {"generated": 1, "answer_unusable": 2, "answer_missing": 1}
    assert collected["unusable"] == {
        "length": 1,
        "refusal": 1,
        "status 500": 1,
        "unreadable_line": 1,
        "duplicate_line": 1,
        "unknown_request": 2,
    }
    assert stored("u-late") is None and stored("u-london") is None
    set_aside = sorted(str(getattr(record, "why", "")) for record in caplog.records if hasattr(record, "customId"))
    assert set_aside == ["duplicate_line", "unknown_request", "unknown_request", "unreadable_line"]
    # Billed: each answer the provider made, the unknown ones too, the duplicate once.
    billed = sum(record.prompt_tokens + record.completion_tokens for record in fake.billing)
    assert len(fake.billing) == 5 and sum(emitted_metrics(capsys, "NudgeBatchTokens")) == billed


def test_a_storage_error_while_storing_one_jobs_answers_is_that_jobs_trouble_and_the_run_reports_it(
    aws: Aws, fake: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tokyo's and Seoul's jobs (one submit hour) finish together; storing one Seoul answer fails
    (DynamoDB, after its retries). The run ends normally with its metrics, Tokyo's plans and the
    other Seoul one are stored, and Seoul's job is read again by the next run."""
    seoul = ("seoul-1", "seoul-2")
    for user in seoul:
        aws.add_user(userId=user, problems=PROBLEMS, timezone="Asia/Seoul")
    script_partial_failures(fake, applies_to=lambda meta: meta["cohort"].startswith("Asia/Tokyo"))
    plans = {user: Reply(content=plan_text()) for user in seoul}
    fake.batches.script_next(BatchScript(running_s=300, answers=plans, key_of=requested_user))
    sent = run_batches()
    wait_for_the_job(fake)
    [seoul_job] = [job["batchId"] for job in sent["submitted"] if job["timezone"] == "Asia/Seoul"]
    create = DynamoScheduleRepository.create

    def failing_for_seoul_2(self: DynamoScheduleRepository, record: Any) -> bool:
        if record.user_id == "seoul-2":
            raise StorageThrottled("DynamoDB throttled the request (ProvisionedThroughputExceededException)")
        return create(self, record)

    monkeypatch.setattr(DynamoScheduleRepository, "create", failing_for_seoul_2)
    capsys.readouterr()
    troubled = run_batches()
    errors = emitted_metrics(capsys, "NudgeBatchJobErrors")
    monkeypatch.setattr(DynamoScheduleRepository, "create", create)
    again = run_batches()

    [error] = troubled["jobErrors"]
    assert error["job"] == seoul_job and "could not be stored" in error["why"]
    assert troubled["collected"] == {"generated": 2, "answer_unusable": 2, "answer_missing": 1, "storage_failed": 1}
    assert errors == [1.0]  # the run's metrics were written
    assert again["jobErrors"] == [] and again["collected"] == {"generated": 1, "already_generated": 1}
    assert stored("u-ok") is not None and all(stored(user) is not None for user in seoul)


def test_two_overlapping_runs_collect_a_job_once_and_count_its_tokens_once(
    aws: Aws, fake: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """EventBridge delivers the schedule twice: the second run reads and collects the job while the
    first is storing its first answer."""
    script_partial_failures(fake)
    run_batches()
    wait_for_the_job(fake)
    create = DynamoScheduleRepository.create
    overlapping: list[dict[str, Any]] = []

    def create_while_the_other_run_goes(self: DynamoScheduleRepository, record: Any) -> bool:
        if not overlapping:
            overlapping.append({})
            overlapping[0] = run_batches()
        return create(self, record)

    monkeypatch.setattr(DynamoScheduleRepository, "create", create_while_the_other_run_goes)
    capsys.readouterr()
    first = run_batches()
    tokens = emitted_metrics(capsys, "NudgeBatchTokens")
    later = run_batches()

    [second] = overlapping
    billed = sum(record.prompt_tokens + record.completion_tokens for record in fake.billing)
    assert sum(tokens) == billed  # counted by one run only
    assert first["collected"].get("generated", 0) + second["collected"].get("generated", 0) == 1
    assert later["collected"] == {} and later["stillRunning"] == 0  # not reopened


# -- what the provider may fail ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "fault"),
    [("create", Fault(429)), ("create", Fault(400)), ("upload", Fault(500)), ("upload", "closed")],
    ids=["create-429", "create-400", "upload-500", "upload-closed"],
)
def test_a_refused_create_or_a_failed_upload_makes_no_job_and_leaves_the_cohort_to_the_synchronous_path(
    aws: Aws, fake: FakeOpenAIServer, call: Literal["create", "upload"], fault: Fault | Literal["closed"]
) -> None:
    fake.batches.fail_next(call, fault)

    sent = run_batches()
    again = run_batches()

    assert sent["submitted"] == [] and len(sent["refused"]) == 1 and sent["jobErrors"] == []
    assert fake.batches.jobs == {} and fake.billing == []
    assert again["submitted"] == again["refused"] == []  # the claim stays: never sent twice


def test_a_list_that_fails_while_a_lost_job_is_looked_up_is_counted_and_the_job_is_found_next_run(
    aws: Aws, fake: FakeOpenAIServer
) -> None:
    script_partial_failures(fake, lost_create=Fault(500))
    fake.batches.fail_next("list", Fault(503))

    sent = run_batches()
    wait_for_the_job(fake)
    found = run_batches()

    assert sent["submitted"] == [] and sent["unconfirmed"] == 1 and len(sent["jobErrors"]) == 2
    [job] = fake.batches.jobs.values()
    assert [recovered["batchId"] for recovered in found["recovered"]] == [job.id]
    assert found["collected"] == {"generated": 1, "answer_unusable": 2, "answer_missing": 1}


def test_a_job_failed_for_the_enqueued_token_quota_with_no_other_model_is_left_to_the_synchronous_path(
    aws: Aws, fake: FakeOpenAIServer
) -> None:
    fake.batches.enqueued_token_quota = 1_000  # less than the cohort's requests ask for
    run_batches()
    wait_for_the_job(fake)

    summary = run_batches()

    [passed] = summary["passedOn"]
    assert passed["why"].startswith("token_limit_exceeded: Enqueued token limit reached")
    [refused] = summary["refused"]
    assert refused["cohort"] == f"Asia/Tokyo {tomorrow()}" and "token_limit_exceeded" in refused["why"]
    assert summary["submitted"] == [] and len(fake.batches.jobs) == 1 and fake.billing == []
    assert run_batches()["refused"] == []  # refused once, not submitted again
