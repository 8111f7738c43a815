"""A chat answer's words on its user's WebSocket as the model writes them, end to end: the local
runner, the real handlers, the real openai client against the fake server streaming at a real
model's pace in real seconds, and the real ``websockets`` client (docs/api.md#websocket).

What is held: the words come before the answer's ``done``, and joined by offset they equal the
stored answer exactly, by socket and by REST; another user's socket gets none of them; a socket
closed mid-answer loses nothing (the answer is stored whole, counted to the budget once, and the
connection is deleted). Orderings and equalities only, never seconds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from devtools.fake_openai import FakeOpenAIServer, Reply
from devtools.runner import LocalRunner
from tests.support.socket_clients import (
    budget_counted,
    frame,
    joined,
    rest,
    sent,
    served_on_fake_openai,
    socket,
    until_done,
)
from tests.unit.chat.answers import answer

pytestmark = pytest.mark.integration

PROSE = "中途採用の段取りを、求人票の作成から入社手続きまで五つの工程に分けて整理しました。" * 6
ANSWER = answer(prose=PROSE)  # ~400 tokens: a few seconds at the pace below
PACE = Reply(content=ANSWER, first_token_s=0.3, tokens_per_s=150.0)


@pytest.fixture(scope="module")
def served(fake: FakeOpenAIServer) -> Iterator[tuple[LocalRunner, str]]:
    environ = {"AI_AGENT_MODE": "openai", "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": fake.base_url}
    with served_on_fake_openai(environ, poll_s=0.1) as it:
        yield it


def chat_session(url: str, user: str) -> str:
    status, body = rest(url, "POST", "/ai-agent/sessions", user, {})
    assert status == 201
    return str(body["sessionId"])


def stored(url: str, user: str, session: str) -> dict[str, Any]:
    status, body = rest(url, "GET", f"/ai-agent/sessions/{session}/messages/2", user)
    assert status == 200, body
    return body


def test_by_socket_the_words_come_before_done_and_joined_equal_the_stored_answer(
    served: tuple[LocalRunner, str], fake: FakeOpenAIServer
) -> None:
    _, url = served
    session = chat_session(url, "ivan")
    fake.enqueue(PACE)
    with socket(url, "ivan") as ws:
        assert sent(ws, session, "段取りを作りたい", "pace-1")["type"] == "accepted"
        words, done = until_done(ws)
    answered = stored(url, "ivan", session)
    deltas = [w for w in words if w["type"] == "delta"]
    assert len(deltas) > 2  # written in pieces while the model wrote, not once at the end
    assert not any("```" in d["text"] for d in deltas[:-1])  # no fence while it was written
    assert joined(words) == answered["aiResponse"]["content"] == done["aiResponse"]["content"]
    assert answered["aiResponse"]["templateDraft"]["ok"] and not answered["aiResponse"]["fallback"]


def test_by_rest_the_open_socket_gets_the_words_and_another_users_socket_gets_nothing(
    served: tuple[LocalRunner, str], fake: FakeOpenAIServer
) -> None:
    _, url = served
    session = chat_session(url, "judy")
    fake.enqueue(PACE)
    with socket(url, "judy") as judys, socket(url, "mallory") as mallorys:
        status, body = rest(url, "POST", f"/ai-agent/sessions/{session}/messages", "judy", {"message": "段取りを"})
        assert status == 200, body
        words, done = until_done(judys)
        mallorys.send('{"action": "nothing"}')
        first = frame(mallorys)  # mallory's first frame: the answer to her own message, none of judy's
    assert len([w for w in words if w["type"] == "delta"]) > 2
    assert joined(words) == body["aiResponse"]["content"] == done["aiResponse"]["content"]
    assert first["type"] == "error" and first["error"]["code"] == "UNKNOWN_ACTION"


def test_a_socket_closed_mid_answer_loses_nothing_counts_the_budget_once_and_is_deleted(
    served: tuple[LocalRunner, str], fake: FakeOpenAIServer
) -> None:
    runner, url = served
    session = chat_session(url, "kate")
    fake.enqueue(Reply(content=ANSWER, first_token_s=0.3, tokens_per_s=60.0))
    dynamodb = runner.aws.client("dynamodb")
    with socket(url, "kate") as ws:
        assert sent(ws, session, "段取りを作りたい", "close-1")["type"] == "accepted"
        assert frame(ws)["type"] == "delta"  # the answer is being written: the socket goes now
    answered: dict[str, Any] = {}
    for _ in range(600):  # the worker finishes the answer; read it as a reconnecting client would
        status, answered = rest(url, "GET", f"/ai-agent/sessions/{session}/messages/2", "kate")
        if status == 200:
            break
        time.sleep(0.1)
    assert answered["aiResponse"]["content"].startswith(PROSE)  # the whole answer, stored
    assert answered["aiResponse"]["templateDraft"]["ok"] and not answered["aiResponse"]["fallback"]
    items = dynamodb.scan(TableName="ConnectionsTable")["Items"]
    assert [item for item in items if item["userId"]["S"] == "kate"] == []
    assert budget_counted(runner, "kate") == answered["usage"]["tokens"] > 0  # the budget counts the answer once
