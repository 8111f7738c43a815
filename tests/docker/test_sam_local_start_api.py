"""`sam local start-api` serves the template's routes from Lambda containers, with the README's
local identity switch: a Cognito route, an IAM route, and a chat message answered 202, written
by ChatAnswerFunction (`sam local invoke` with the SQS event of the message the request queued)
and then read back. The last test runs the real openai client inside a container against the
fake provider (devtools/fake_openai) on Docker's bridge.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from devtools.fake_openai import FakeOpenAIServer
from devtools.runner_event_sources import sqs_event
from devtools.runner_template import IntrinsicResolver, queue_specs
from devtools.template import ROOT, load_template
from tests.docker.conftest import REGION, StartedApi, openai_mode, sam_local_invoke
from tests.docker.conftest import LocalAws as SamLocalAws
from tests.support.http_json import exchange

pytestmark = pytest.mark.docker

TEMPLATE = load_template()
USER = {"X-Local-User": "user-1"}
ADMIN = {"X-Local-Admin": "release-bot"}
# A container's first request is a cold start behind the SAM CLI's image build.
TIMEOUT_S = 120.0


def call(api: StartedApi, method: str, path: str, headers: dict[str, str] | None = None, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    sent = {"Content-Type": "application/json", **(headers or {})}
    return exchange(f"{api.url}{path}", method, sent, data, timeout_s=TIMEOUT_S)


@pytest.mark.parametrize("identity", [{}, ADMIN])
def test_given_start_api_when_a_cognito_route_is_called_without_a_local_user_then_it_is_401(
    api: StartedApi, identity: dict[str, str]
) -> None:
    status, _, body = call(api, "GET", "/process-templates", identity)

    assert status == 401, body


def test_given_start_api_when_a_local_user_lists_process_templates_then_the_cognito_route_answers(
    api: StartedApi,
) -> None:
    status, _, body = call(api, "GET", "/process-templates", USER)

    assert status == 200, body
    assert isinstance(body["items"], list)


def test_given_start_api_when_a_local_admin_reads_pending_posts_then_the_iam_route_answers(api: StartedApi) -> None:
    status, _, body = call(api, "GET", "/api/admin/tiktok/pending", ADMIN)
    unsigned, _, _ = call(api, "GET", "/api/admin/tiktok/pending", USER)

    assert status == 200, body
    assert body["count"] == len(body["tiktokPosts"])
    assert unsigned == 401


def test_given_a_chat_message_sent_respond_async_when_its_worker_runs_then_the_answer_is_read_back(
    api: StartedApi, local_aws: SamLocalAws, env_file: Path, tmp_path: Path
) -> None:
    created, _, session = call(api, "POST", "/ai-agent/sessions", USER, {"context": {"goal": "4月1日入社"}})
    assert created == 201, session
    messages = f"/ai-agent/sessions/{session['sessionId']}/messages"

    accepted, headers, pending = call(
        api, "POST", messages, {**USER, "Prefer": "respond-async"}, {"message": "中途採用の段取りを作りたいです"}
    )
    assert accepted == 202, pending
    assert pending["status"] == "pending" and int(headers["Retry-After"]) >= 1
    answer_path = f"{messages}/{pending['answerSeq']}"
    waiting, _, _ = call(api, "GET", answer_path, USER)
    assert waiting == 202

    queue = queue_specs(TEMPLATE, IntrinsicResolver(TEMPLATE, region=REGION))["ChatAnswersQueue"]
    sqs = local_aws.client("sqs")
    url = sqs.get_queue_url(QueueName=queue.name)["QueueUrl"]
    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"], WaitTimeSeconds=5)
    handed_over = received.get("Messages", [])
    assert len(handed_over) == 1, handed_over
    worker = sam_local_invoke("ChatAnswerFunction", sqs_event(handed_over, queue, REGION), env_file, tmp_path)
    assert worker.result == {"batchItemFailures": []}, worker.result

    read, _, answer = call(api, "GET", answer_path, USER)
    assert read == 200, answer
    assert answer["aiResponse"]["content"], answer
    other_user, _, _ = call(api, "GET", answer_path, {"X-Local-User": "user-2"})
    assert other_user == 404


def test_given_the_openai_mode_when_the_judge_runs_in_a_container_then_the_real_client_calls_the_provider(
    invoke: Any, fake_provider: FakeOpenAIServer
) -> None:
    event = json.loads((ROOT / "events/judge/direct.json").read_text(encoding="utf-8"))

    judged = invoke("StatusJudgeFunction", event, openai_mode(fake_provider))

    assert "errorType" not in judged.result, judged.result
    assert judged.result["method"] in {"structured_output", "tag_fallback", "ai_judge"}
    assert fake_provider.requests, "the container never reached the fake provider"
    assert all(request["model"] == "gpt-4o-2024-08-06" for request in fake_provider.requests)
    billed = sum(record.prompt_tokens + record.completion_tokens for record in fake_provider.billing)
    assert judged.result["totalTokens"] == billed
