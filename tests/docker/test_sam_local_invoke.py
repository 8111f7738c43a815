"""Every function of the template, invoked by `sam local invoke` in a Lambda container, answers its
sample event as the runner's tests say it must, and as the local runner answers the same event.

Each case starts from the template's empty tables and queues on the sam-local endpoint, invokes
the built function in Docker (the base image built here, aws-lambda-rie, awslambdaric, the
layer at /opt), then runs the same event through the local runner from the same empty store: the
status (or the failed batch items, or the error) must be the same and the answers must have the
same shape. Scheduled functions get the runner's Scheduled Event; one queue consumer gets the SQS
event `sam local generate-event` makes.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools.fake_openai import FakeOpenAIServer
from devtools.local_aws import LocalAws, ensure_queues, ensure_tables
from devtools.runner import LocalRunner
from devtools.runner_event_sources import scheduled_event
from devtools.runner_template import IntrinsicResolver, function_specs, queue_specs, schedule_specs
from devtools.template import ROOT, load_template
from tests.docker.conftest import REGION, SAM, Invocation, openai_mode
from tests.docker.conftest import LocalAws as SamLocalAws
from tests.integration.events.test_event_files import (
    REJECTED_AS_INVALID,
    REJECTED_AS_UNAUTHENTICATED,
    target_function,
)

pytestmark = pytest.mark.docker

TEMPLATE = load_template()
# One sample event per function from events/ (and a rejected one of each kind), named for what the
# runner's event-file test expects of it.
EVENT_FILES = [
    "events/chat/create_session.json",
    "events/chat/post_message_empty.json",
    "events/chat/sqs_pending_turn.json",
    "events/interview/list_open_jobs.json",
    "events/interview/sqs_pending_turn.json",
    "events/jobs/create_job.json",
    "events/judge/direct.json",
    "events/nudges/put_profile.json",
    "events/nudges/schedule.json",
    "events/nudges/sqs_batch.json",
    "events/nudges/tiktok_pending.json",
    "events/socket/authorize_bad_token.json",
    "events/socket/connect.json",
    "events/socket/send_chat_message_unknown_session.json",
    "events/templates/create_template.json",
]
SCHEDULED = sorted(schedule_specs(TEMPLATE))
# NudgeBatchFunction exists only with NudgeFanoutMode batch (its Condition) and needs the openai
# mode: sam local ignores a function's Condition, the runner does not.
BATCH_MODE = {"NudgeFanoutMode": "batch"}


def fresh_store(local_aws: SamLocalAws) -> None:
    """The template's tables and queues, empty: moto forgets everything, then they are made again."""
    request = urllib.request.Request(f"{local_aws.url}/moto-api/reset", method="POST")
    urllib.request.urlopen(request, timeout=10).close()
    ensure_tables(local_aws.client("dynamodb"), TEMPLATE)
    ensure_queues(local_aws.client("sqs"), queue_specs(TEMPLATE, IntrinsicResolver(TEMPLATE, region=REGION)))


def runner_for(local_aws: SamLocalAws, **options: Any) -> LocalRunner:
    """The local runner on the same endpoint, so that both start from the same empty store."""
    endpoints = {f"AWS_ENDPOINT_URL_{service}": local_aws.url for service in ("DYNAMODB", "SQS", "EVENTBRIDGE")}
    environ = {"AWS_DEFAULT_REGION": REGION, **endpoints, **options.pop("environ", {})}
    return LocalRunner(environ=environ, local_aws=LocalAws(environ), **options)


@pytest.fixture
def runner_on(local_aws: SamLocalAws) -> Iterator[LocalRunner]:
    with runner_for(local_aws) as runner:
        yield runner


def shape(value: Any) -> Any:
    """What an answer is made of, without the values that differ between two runs (ids, times)."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def outcome(result: Any) -> Any:
    """The part of a result both runs must agree on exactly, and the shape of the rest."""
    if not isinstance(result, dict):
        return shape(result)
    if "errorType" in result:
        return {"errorType": result["errorType"], "errorMessage": result.get("errorMessage")}
    if "statusCode" in result:
        body = result.get("body") or "null"
        return {"statusCode": result["statusCode"], "body": shape(json.loads(body))}
    if "batchItemFailures" in result:
        return result
    return shape(result)


def assert_answered_as_named(path: str, event: dict[str, Any], result: Any) -> None:
    """The runner's event-file test: the file's name says what the answer is."""
    assert "errorType" not in result, result
    if "httpMethod" not in event:
        return
    status = result["statusCode"]
    name = Path(path).name
    if REJECTED_AS_UNAUTHENTICATED.search(name):
        assert status == 401, result
    elif REJECTED_AS_INVALID.search(name):
        assert status == 400, result
    else:
        assert status < 300 or status == 404, result


def compare_with_runner(
    local_aws: SamLocalAws, runner: LocalRunner, function_id: str, event: Any, in_container: Invocation
) -> None:
    fresh_store(local_aws)
    by_runner = runner.invoke(function_id, event)
    assert outcome(in_container.result) == outcome(by_runner), (in_container.result, by_runner)


def test_the_suite_invokes_every_function_of_the_template() -> None:
    covered = {target_function(ROOT / path, json.loads((ROOT / path).read_text())) for path in EVENT_FILES}

    assert covered | set(SCHEDULED) == set(function_specs(TEMPLATE))


@pytest.mark.parametrize("path", EVENT_FILES)
def test_given_an_empty_store_when_sam_local_invokes_a_sample_event_then_it_answers_as_the_runner_does(
    local_aws: SamLocalAws, runner_on: LocalRunner, invoke: Any, path: str
) -> None:
    event = json.loads((ROOT / path).read_text(encoding="utf-8"))
    function_id = target_function(ROOT / path, event)
    fresh_store(local_aws)

    in_container = invoke(function_id, event)

    assert_answered_as_named(path, event, in_container.result)
    compare_with_runner(local_aws, runner_on, function_id, event, in_container)


@pytest.mark.parametrize("function_id", [f for f in SCHEDULED if f != "NudgeBatchFunction"])
def test_given_the_runners_scheduled_event_when_sam_local_invokes_a_scheduled_function_then_it_runs(
    local_aws: SamLocalAws, runner_on: LocalRunner, invoke: Any, function_id: str
) -> None:
    event = scheduled_event(schedule_specs(TEMPLATE)[function_id][0], REGION)
    fresh_store(local_aws)

    in_container = invoke(function_id, event)

    assert "errorType" not in in_container.result, in_container.result
    compare_with_runner(local_aws, runner_on, function_id, event, in_container)


def test_given_the_batch_fanout_when_sam_local_invokes_the_batch_function_then_it_asks_the_provider(
    local_aws: SamLocalAws, invoke: Any, fake_provider: FakeOpenAIServer
) -> None:
    event = scheduled_event(schedule_specs(TEMPLATE)["NudgeBatchFunction"][0], REGION)
    fresh_store(local_aws)

    in_container = invoke(
        "NudgeBatchFunction", event, openai_mode(fake_provider), [f"{k}={v}" for k, v in BATCH_MODE.items()]
    )

    assert "errorType" not in in_container.result, in_container.result
    environ = {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": fake_provider.base_url}
    with runner_for(local_aws, environ=environ, parameter_overrides=BATCH_MODE) as runner:
        compare_with_runner(local_aws, runner, "NudgeBatchFunction", event, in_container)


def test_given_sams_generated_sqs_event_when_the_nudge_generator_gets_it_then_the_unknown_user_is_skipped(
    local_aws: SamLocalAws, runner_on: LocalRunner, invoke: Any
) -> None:
    # generate-event pastes --body into its JSON unescaped (a JSON body makes it fail): a plain
    # word is given, then replaced by the message the scheduler would have sent.
    generated = subprocess.run(
        [str(SAM), "local", "generate-event", "sqs", "receive-message", "--body", "placeholder"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    event = json.loads(generated.stdout)
    (record,) = event["Records"]
    record["body"] = json.dumps({"userId": "nobody-yet", "localDate": "2026-02-02"})
    fresh_store(local_aws)

    in_container = invoke("NudgeGeneratorFunction", event)

    assert in_container.result == {"batchItemFailures": []}
    assert "skipped_unknown_user" in in_container.logs
    compare_with_runner(local_aws, runner_on, "NudgeGeneratorFunction", event, in_container)
