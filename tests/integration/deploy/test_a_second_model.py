"""Spec: with the first model's provider down and a second model configured (the template's
FallbackModels), chat, judge, interview and the generator are served by the second model within
their deadlines: the same answers as with a healthy provider, no fallback, no 503. The template's
configuration runs through the local runner with the real openai client and two fake servers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime

import pytest
from lambda_agents.llm.offline_model import sample
from lambda_agents.llm.schema import model_schema
from lambda_agents.nudges.schema import create_agent_output_model
from lambda_agents.nudges.slots import DEFAULT_SCHEDULE_MAP, build_slot_table

from devtools.fake_openai import FakeOpenAIServer, Fault, Reply
from devtools.runner import LocalRunner
from tests.live.routes import sample_body

from .test_policies_cover_what_the_product_does import TOKYO, USER, Api, store_openai_key

pytestmark = pytest.mark.integration


@pytest.fixture
def servers() -> Iterator[tuple[FakeOpenAIServer, FakeOpenAIServer]]:
    with FakeOpenAIServer() as first, FakeOpenAIServer() as second:
        first.set_outage(Fault(500))
        yield first, second


@pytest.fixture
def deployed(
    servers: tuple[FakeOpenAIServer, FakeOpenAIServer], monkeypatch: pytest.MonkeyPatch
) -> Iterator[LocalRunner]:
    first, second = servers
    fallback = [{"model": "gpt-4o-mini", "baseUrl": second.base_url, "apiKey": "sk-second"}]
    environ = {
        "AWS_DEFAULT_REGION": "us-east-1",
        "AI_AGENT_MODE": "openai",
        "OPENAI_BASE_URL": first.base_url,
    }
    with LocalRunner(environ=environ, parameter_overrides={"FallbackModels": json.dumps(fallback)}) as runner:
        store_openai_key(runner, monkeypatch, "sk-first")  # as deployed: the first model's key in SSM
        yield runner
        runner.aws.reset()


def test_every_model_route_is_served_by_the_second_model_while_the_first_is_down(
    deployed: LocalRunner, servers: tuple[FakeOpenAIServer, FakeOpenAIServer]
) -> None:
    first, second = servers
    api = Api(deployed)

    status, session = api.user("POST", "/ai-agent/sessions", {})
    assert status == 201, session
    status, answer = api.user("POST", f"/ai-agent/sessions/{session['sessionId']}/messages", {"message": "こんにちは"})
    assert status == 200, answer
    assert not answer["aiResponse"]["content"].startswith("申し訳ありません")  # not the fallback answer

    status, judged = api.admin("POST", "/judge", sample_body("judge/api-post-judge.json"))
    assert status == 200, judged

    job = sample_body("jobs/create_job.json") | {"jobId": "job-second-model"}
    assert api.admin("POST", "/api/admin/jobs", job)[0] == 201
    _, interview = api.start_consented_interview(job["jobId"])
    status, turn = api.user("POST", f"{interview}/messages", {"text": "バリスタ経験は3年です"})
    assert status == 200, turn

    profile = sample_body("nudges/put_profile.json")
    assert api.user("PUT", "/nudges/profile", profile)[0] in {200, 201}
    slots = len(build_slot_table(profile["problems"], DEFAULT_SCHEDULE_MAP))
    plan = sample(model_schema(create_agent_output_model(slots)), profile["preferredLanguage"])
    second.enqueue(Reply(content=json.dumps(plan)))
    today = datetime.now(TOKYO).date().isoformat()
    deployed.send_message("NudgeQueue", json.dumps({"userId": USER, "localDate": today}))
    report = deployed.deliver("NudgeQueue", redeliver_failures=False)
    assert report.succeeded == 1 and report.failed_deliveries == 0
    stored = deployed.aws.client("dynamodb").get_item(
        TableName="SchedulesTable", Key={"pk": {"S": f"USER#{USER}"}, "sk": {"S": f"SCHEDULE#{today}"}}
    )["Item"]
    assert stored["fallbackUsed"] == {"BOOL": False} and stored["model"] == {"S": "gpt-4o-mini"}

    assert len(second.requests) >= 5 and second.keys_seen[0] == "sk-second"
    assert {request.get("model") for request in second.requests} == {"gpt-4o-mini"}
    second.assert_script_consumed()
    assert first.requests and set(first.keys_seen) == {"sk-first"}  # the first model was asked, and failed
