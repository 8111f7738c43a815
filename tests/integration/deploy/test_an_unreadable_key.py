"""Spec: with the model's key parameter missing (deleted, renamed, or under a KMS key the roles
cannot use), every route that does not call the model answers as usual and every model route
gives its documented degraded answer: no 500, nothing lost. The template's configuration for AWS
runs through the local runner: AI_AGENT_MODE=openai, the key's name in Parameter Store, and no
such parameter."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime

import pytest

from devtools.fake_openai import FakeOpenAIServer
from devtools.runner import LocalRunner
from tests.live.routes import sample_body

from .test_policies_cover_what_the_product_does import ADMIN, TOKYO, USER, Api

pytestmark = pytest.mark.integration


@pytest.fixture
def deployed(monkeypatch: pytest.MonkeyPatch, fake_openai: FakeOpenAIServer) -> Iterator[LocalRunner]:
    with LocalRunner(environ={"AWS_DEFAULT_REGION": "us-east-1"}) as local:
        monkeypatch.setenv("AWS_ENDPOINT_URL_SSM", local.aws.endpoints.dynamodb)  # no key parameter in it
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        environ = {
            "AWS_DEFAULT_REGION": local.region,
            "AI_AGENT_MODE": "openai",
            "OPENAI_BASE_URL": fake_openai.base_url,
        }
        with LocalRunner(environ=environ, local_aws=local.aws) as runner:
            yield runner
        local.aws.reset()


def test_routes_without_a_model_call_work_and_model_routes_degrade_as_documented(
    deployed: LocalRunner, fake_openai: FakeOpenAIServer
) -> None:
    api = Api(deployed)
    # Interview: the catalog and the applicant's list need no model.
    job = sample_body("jobs/create_job.json") | {"jobId": "job-no-key"}
    assert api.admin("POST", "/api/admin/jobs", job)[0] == 201
    assert api.user("GET", "/jobs")[0] == 200
    _, interview = api.start_consented_interview("job-no-key")
    status, refused = api.user("POST", f"{interview}/messages", {"text": "バリスタ経験は3年です"})
    assert status == 503 and refused["error"]["code"] == "MODEL_UNAVAILABLE", refused
    assert api.user("GET", interview)[0] == 200  # the interview is still there, its state unchanged
    assert api.user("GET", "/interviews")[0] == 200

    # Chat: the session is created; a message gets the documented answer for a model outage.
    status, session = api.user("POST", "/ai-agent/sessions", {})
    assert status == 201, session
    status, answer = api.user("POST", f"/ai-agent/sessions/{session['sessionId']}/messages", {"message": "こんにちは"})
    # Fallback D ("the AI assistant cannot answer right now"), stored like any answer.
    assert status == 200 and answer["aiResponse"]["content"].startswith("申し訳ありません"), answer
    assert api.user("GET", f"/ai-agent/sessions/{session['sessionId']}")[0] == 200

    # Judge: 503, as for any model outage.
    status, judged = api.admin("POST", "/judge", sample_body("judge/api-post-judge.json"))
    assert status == 503 and judged["error"]["code"] == "MODEL_UNAVAILABLE", judged

    # Generator: the rule-based nudges, no failed record, nothing in the dead-letter queue.
    assert api.user("PUT", "/nudges/profile", sample_body("nudges/put_profile.json"))[0] in {200, 201}
    today = datetime.now(TOKYO).date().isoformat()
    deployed.send_message("NudgeQueue", json.dumps({"userId": USER, "localDate": today}))
    report = deployed.deliver("NudgeQueue", redeliver_failures=False)
    assert report.succeeded == 1 and report.failed_deliveries == 0
    status, day = api.user("GET", f"/nudges/schedule?date={today}")
    assert status == 200 and day["count"] > 0

    assert fake_openai.keys_seen == []  # no request ever left without a key
    assert ADMIN
