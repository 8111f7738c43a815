"""Spec: every URL the product hands out resolves against the URL the client called, on
the execute-api URL's stage (``/v1/...``) and behind a custom domain's base path (``ApiBasePath``)
alike, and reading it back gives the answer.

The URLs the API hands out are the 202's ``Location`` and its body's ``answerUrl`` (a chat answer
written after the request) and ``turnUrl`` (an interview turn or correction answered after it); listings
page with opaque cursors, not URLs. The template's API runs in the local runner over HTTP with
``ApiBasePath=/agents``, the worker of each 202 runs from its queue, and each URL is followed as a
client follows it: resolved against the URL it called (RFC 3986), never rebuilt from the route."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest

from devtools.runner import LocalRunner, serving
from devtools.template import ROOT
from tests.support.http_json import exchange

pytestmark = pytest.mark.integration

USER = {"X-Local-User": "url-user", "Content-Type": "application/json"}
ADMIN = {"X-Local-Admin": "url-admin", "Content-Type": "application/json"}
LATER = {"Prefer": "respond-async"}
ENTRANCES = {"execute_api_stage": "/v1", "custom_domain_base_path": "/agents"}


def sample(event_file: str) -> Any:
    return json.loads(json.loads(Path(ROOT, "events", event_file).read_text(encoding="utf-8"))["body"])


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[LocalRunner, str]]:
    environ = {"AWS_DEFAULT_REGION": "us-east-1", "AI_AGENT_MODE": "mock"}
    with LocalRunner(environ=environ, parameter_overrides={"ApiBasePath": "/agents"}) as runner:
        try:
            with serving(runner) as root:
                yield runner, root
        finally:
            runner.aws.reset()


@dataclass(frozen=True)
class Entrance:
    """The runner, and the API's URL through one entrance (``base``: its stage or base path)."""

    runner: LocalRunner
    api: str
    base: str


@pytest.fixture(params=ENTRANCES.values(), ids=ENTRANCES.keys())
def entrance(served: tuple[LocalRunner, str], request: pytest.FixtureRequest) -> Entrance:
    runner, root = served
    return Entrance(runner, f"{root}{request.param}", request.param)


def call(url: str, method: str = "GET", headers: dict[str, str] | None = None, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body, ensure_ascii=False).encode()
    return exchange(url, method, headers or USER, data, timeout_s=60)


def follow(called: str, handed_out: str) -> str:
    """The URL a client reads: the handed-out reference resolved against the URL it called."""
    return urljoin(called, handed_out)


def accepted(called: str, answer: tuple[int, dict[str, str], Any], field: str, base: str) -> str:
    """The 202's URL, the same in its header and its body, under the base the client called."""
    status, headers, body = answer
    assert status == 202, body
    assert headers["Location"] == body[field], (headers, body)
    url = follow(called, headers["Location"])
    assert urlsplit(url).path.startswith(f"{base}/"), url
    assert urlsplit(url).netloc == urlsplit(called).netloc
    return url


def read_when_ready(runner: LocalRunner, url: str, queue: str, field: str) -> Any:
    """202 while the worker has not run (pointing at itself), then the worker runs, then 200."""
    status, headers, body = call(url)
    assert status == 202 and follow(url, headers["Location"]) == url == follow(url, body[field]), body
    report = runner.deliver(queue)
    assert (report.succeeded, report.failed_deliveries) == (1, 0), report.summary()
    status, _, answer = call(url)
    assert status == 200, answer
    return answer


def test_a_chat_answer_written_later_is_read_back_at_the_url_the_202_hands_out(entrance: Entrance) -> None:
    runner, api, base = entrance.runner, entrance.api, entrance.base
    status, _, session = call(f"{api}/ai-agent/sessions", "POST", body=sample("chat/create_session.json"))
    assert status == 201, session
    posted = f"{api}/ai-agent/sessions/{session['sessionId']}/messages"

    answer = call(posted, "POST", {**USER, **LATER}, {"message": "月次決算の手順を作りたい"})
    url = accepted(posted, answer, "answerUrl", base)

    read = read_when_ready(runner, url, "ChatAnswersQueue", "answerUrl")
    assert read["aiResponse"]["seq"] == answer[2]["answerSeq"] and read["aiResponse"]["content"]


def test_an_interview_turn_and_a_correction_answered_later_are_read_back_at_the_urls_the_202s_hand_out(
    entrance: Entrance,
) -> None:
    runner, api, base = entrance.runner, entrance.api, entrance.base
    job = sample("jobs/create_job.json") | {"jobId": f"job-url-{base.strip('/')}"}
    assert call(f"{api}/api/admin/jobs", "POST", ADMIN, job)[0] == 201
    status, _, started = call(f"{api}/interviews", "POST", body={"jobId": job["jobId"]})
    assert status == 201, started
    interview = f"{api}/interviews/{started['sessionId']}"
    consent = {"accepted": True, "noticeId": started["notice"]["noticeId"]}
    assert call(f"{interview}/consent", "POST", body=consent)[0] == 200

    posted = f"{interview}/messages"
    turn = accepted(
        posted, call(posted, "POST", {**USER, **LATER}, sample("interview/post_message.json")), "turnUrl", base
    )
    reply = read_when_ready(runner, turn, "InterviewTurnsQueue", "turnUrl")
    assert reply["sessionId"] == started["sessionId"] and reply["reply"]

    optional = next(field["field_id"] for field in job["fields"] if not field["required"])
    assert call(f"{interview}/fields/{optional}/skip", "POST")[0] == 200
    corrected = f"{interview}/fields/{optional}/correction"
    answer = call(corrected, "POST", {**USER, **LATER}, {"text": "趣味はコーヒーの焙煎です"})
    correction = accepted(corrected, answer, "turnUrl", base)
    assert urlsplit(correction).path.endswith(f"/turns/{answer[2]['turnId']}")
    assert read_when_ready(runner, correction, "InterviewTurnsQueue", "turnUrl")["version"] > reply["version"]
