"""An interview turn on the applicant's open socket while it runs, through the real ``websockets``
client, the local runner's handlers and the real openai client against the fake provider
(docs/interview.md#live-progress): each hidden step a ``progress`` pair, in the order the steps ran
and before ``done``; the question's words as a ``delta`` once its QuickCheck passed, the question
written once (the model's calls counted at the fake); a question that fails its QuickCheck in no
frame; the stored reply equal to the deltas joined. From the request (a REST message) and from the
worker (a socket message, handed over)."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.sync.client import ClientConnection

from devtools.fake_openai import FakeOpenAIServer
from devtools.fake_openai.interview_replies import FAIL_CHECK, GREETING, asked, settings_and_plan, tool
from devtools.runner import LocalRunner
from tests.support.model_speeds import fake_server_environment
from tests.support.socket_clients import frame, joined, rest, served_on_fake_openai, socket

pytestmark = pytest.mark.integration

QUESTION = "これまでのバリスタのご経験について、年数と勤務先を教えてください。"
PROHIBITED = "ご家族のお仕事を教えてください。"
JOB = {
    "jobId": "job-live-interview",
    "title": "Barista",
    "fields": [
        {
            "field_id": "experience",
            "label": "バリスタ経験",
            "intent": "How long and where the applicant worked",
            "required": True,
            "required_facts": ["years", "workplace"],
            "done_criteria": "Both the years and a workplace are known",
        }
    ],
}
PLAN = [{"field_id": "experience", "label": "バリスタ経験", "intent": "経験", "required": True}]


@pytest.fixture(scope="module")
def served(fake: FakeOpenAIServer) -> Iterator[tuple[LocalRunner, str]]:
    with served_on_fake_openai(fake_server_environment(fake.base_url)) as it:
        yield it


def interview_of(url: str, user: str) -> str:
    """A consented interview of ``JOB`` for ``user`` (the job made first, by a local admin)."""
    body = json.dumps(JOB).encode()
    headers = {"X-Local-Admin": "hiring-team", "Content-Type": "application/json"}
    made = urllib.request.Request(f"{url}/v1/api/admin/jobs", data=body, method="POST", headers=headers)
    try:
        urllib.request.urlopen(made, timeout=60).close()
    except urllib.error.HTTPError as error:
        assert error.code == 409  # made by an earlier test
    status, started = rest(url, "POST", "/interviews", user, {"jobId": JOB["jobId"]})
    assert status == 201, started
    consent = {"accepted": True, "noticeId": started["notice"]["noticeId"]}
    assert rest(url, "POST", f"/interviews/{started['sessionId']}/consent", user, consent)[0] == 200
    return str(started["sessionId"])


def frames_until_done(ws: ClientConnection) -> list[dict[str, Any]]:
    """Every frame of one turn, its ``done`` last (an ``accepted`` before them is not read here)."""
    frames: list[dict[str, Any]] = []
    for _ in range(200):
        frames.append(frame(ws))
        if frames[-1]["type"] in ("done", "error"):
            return frames
    raise AssertionError(f"no done in {len(frames)} frames")


def steps(frames: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    return [
        (f["agent"], f["state"]) if f["type"] == "progress" else (f["type"],)
        for f in frames
        if f["type"] != "delta" or f["text"]
    ]


def test_a_turn_answered_in_the_request_shows_its_steps_then_the_checked_question_written_once(
    served: tuple[LocalRunner, str], fake: FakeOpenAIServer
) -> None:
    _, url = served
    session = interview_of(url, "ivy")
    with socket(url, "ivy") as ws:
        fake.enqueue(*asked(GREETING))
        assert rest(url, "POST", f"/interviews/{session}/messages", "ivy", {"text": "こんにちは"})[0] == 200
        greeting = frames_until_done(ws)

        calls_before = len(fake.requests)
        fake.enqueue(*settings_and_plan(PLAN), tool("ask", message=PROHIBITED), FAIL_CHECK, *asked(QUESTION))
        status, answer = rest(
            url, "POST", f"/interviews/{session}/messages", "ivy", {"text": "日本語で。日本在住です。"}
        )
        assert status == 200 and answer["reply"] == QUESTION
        question = frames_until_done(ws)

    assert steps(greeting) == [
        ("greeter", "started"),
        ("greeter", "done"),
        ("quick_check", "started"),
        ("quick_check", "done"),
        ("delta",),
        ("done",),
    ]
    assert steps(question) == [
        *[("greeter", "started"), ("greeter", "done")] * 3,  # language, country, time zone
        ("architect", "started"),
        ("architect", "done"),
        *[("interviewer", "started"), ("interviewer", "done"), ("quick_check", "started"), ("quick_check", "done")]
        * 2,  # the question QuickCheck failed, then the one it passed
        ("delta",),
        ("done",),
    ]
    # Written once: six agent calls and two QuickChecks, no call that writes the question again.
    assert len(fake.requests) - calls_before == 8
    assert all(PROHIBITED not in json.dumps(f, ensure_ascii=False) for f in greeting + question)
    assert joined(question) == question[-1]["reply"] == answer["reply"] == QUESTION
    assert joined(greeting) == greeting[-1]["reply"] == GREETING


def test_a_turn_sent_by_socket_is_answered_by_the_worker_with_the_same_frames_and_the_stored_text(
    served: tuple[LocalRunner, str], fake: FakeOpenAIServer
) -> None:
    runner, url = served
    session = interview_of(url, "judy")
    with socket(url, "judy") as ws:
        message = {"action": "sendMessage", "to": "interview", "sessionId": session, "text": "こんにちは"}
        ws.send(json.dumps({**message, "clientMessageId": "greet-1"}, ensure_ascii=False))
        accepted = frame(ws)
        assert accepted["type"] == "accepted"
        fake.enqueue(*asked(GREETING))
        runner.deliver_all()  # InterviewTurnFunction runs the turn
        frames = frames_until_done(ws)

    assert {(f["sessionId"], f["seq"]) for f in frames} == {(session, accepted["seq"])}
    assert [s for s in steps(frames) if s[0] == "quick_check"] == [("quick_check", "started"), ("quick_check", "done")]
    assert steps(frames)[-2:] == [("delta",), ("done",)]
    status, stored = rest(url, "GET", f"/interviews/{session}/turns/{accepted['seq']}", "judy")
    assert status == 200 and joined(frames) == stored["reply"] == GREETING
