"""The WebSocket API end to end through the real ``websockets`` client, the local runner and the
real handlers (offline model, embedded moto): who may connect, a message by socket answered with
``accepted`` then its words and ``done`` equal to the stored answer, an answer asked by REST reaching the open
socket, another user's socket hearing nothing and asking for nothing, a connection gone mid-answer
losing nothing, and a resend that makes no second turn (docs/api.md#websocket)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from devtools.cloudwatch_rules import emf_documents, series_of
from devtools.runner import LocalRunner
from tests.support.socket_clients import (
    CLIENT,
    POOL,
    Keys,
    budget_counted,
    frame,
    joined,
    rest,
    sent,
    served_runner,
    socket,
    until_done,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def keys() -> Keys:
    return Keys()


@pytest.fixture(scope="module")
def served(keys: Keys) -> Iterator[tuple[LocalRunner, str]]:
    with (
        keys.served() as jwks,
        served_runner(USER_POOL_ID=POOL, USER_POOL_CLIENT_ID=CLIENT, COGNITO_JWKS_URL=jwks) as it,
    ):
        yield it


def chat_session(url: str, user: str) -> str:
    status, body = rest(url, "POST", "/ai-agent/sessions", user, {})
    assert status == 201
    return str(body["sessionId"])


def live_metrics(output: str) -> dict[tuple[str, str], float]:
    """The live channel's metrics among the EMF lines the functions printed, by (name, service)."""
    found: dict[tuple[str, str], float] = {}
    for document in emf_documents(output.splitlines()):
        for series, total in series_of(document):
            if series.name.startswith("Live"):
                key = (series.name, str(series.value("service")))
                found[key] = found.get(key, 0.0) + total
    return found


def connections_of(runner: LocalRunner, user: str) -> list[str]:
    items = runner.aws.client("dynamodb").scan(TableName="ConnectionsTable")["Items"]
    return [item["connectionId"]["S"] for item in items if item["userId"]["S"] == user]


def test_a_connection_without_identity_is_refused_401_before_the_upgrade(served: tuple[LocalRunner, str]) -> None:
    with pytest.raises(InvalidStatus) as refused:
        socket(served[1])
    assert refused.value.response.status_code == 401


@pytest.mark.parametrize(
    "claims",
    [{"aud": "another-client"}, {"token_use": "access"}, {"exp": 1_000_000_000}, {"iss": "https://elsewhere"}],
    ids=["another client", "an access token", "expired", "another pool"],
)
def test_a_token_that_is_not_this_pools_id_token_is_refused_403(
    served: tuple[LocalRunner, str], keys: Keys, claims: dict[str, Any]
) -> None:
    with pytest.raises(InvalidStatus) as refused:
        socket(served[1], Authorization=f"Bearer {keys.token(**claims)}")
    assert refused.value.response.status_code == 403


def test_a_token_signed_by_another_key_is_refused_403(served: tuple[LocalRunner, str]) -> None:
    with pytest.raises(InvalidStatus) as refused:
        socket(served[1], Authorization=Keys().token())
    assert refused.value.response.status_code == 403


def test_an_id_token_of_the_pool_lets_its_user_in_and_messages_are_theirs(
    served: tuple[LocalRunner, str], keys: Keys
) -> None:
    runner, url = served
    session = chat_session(url, "carol")  # the token's sub
    with socket(url, Authorization=f"Bearer {keys.token(sub='carol')}") as ws:
        assert connections_of(runner, "carol")
        assert sent(ws, session, "こんにちは", "token-1")["type"] == "accepted"


def test_a_message_by_socket_is_accepted_then_its_words_and_done_equal_the_stored_answer(
    served: tuple[LocalRunner, str],
) -> None:
    runner, url = served
    session = chat_session(url, "alice")
    with socket(url, "alice") as ws:
        accepted = sent(ws, session, "エンジニア1名の中途採用の段取りを作りたいです", "m-1")
        assert accepted == {"type": "accepted", "clientMessageId": "m-1", "sessionId": session, "to": "chat", "seq": 2}
        runner.deliver_all()  # ChatAnswerFunction writes the answer
        words, done = until_done(ws)
    status, stored = rest(url, "GET", f"/ai-agent/sessions/{session}/messages/2", "alice")
    assert status == 200 and (done["sessionId"], done["seq"]) == (session, 2)
    assert done["aiResponse"] == stored["aiResponse"] and done["usage"] == stored["usage"]
    assert words and {(w["type"], w["sessionId"], w["seq"]) for w in words} == {("delta", session, 2)}
    assert joined(words) == stored["aiResponse"]["content"]


def test_an_answer_asked_by_rest_reaches_the_open_socket(served: tuple[LocalRunner, str]) -> None:
    _, url = served
    session = chat_session(url, "dave")
    with socket(url, "dave") as ws:
        status, answered = rest(url, "POST", f"/ai-agent/sessions/{session}/messages", "dave", {"message": "段取りを"})
        assert status == 200
        words, done = until_done(ws)
    assert done["aiResponse"] == answered["aiResponse"] and joined(words) == answered["aiResponse"]["content"]


def test_another_users_socket_hears_nothing_and_cannot_ask_for_a_session_not_its_own(
    served: tuple[LocalRunner, str],
) -> None:
    _, url = served
    session = chat_session(url, "erin")
    with socket(url, "erin") as erins, socket(url, "mallory") as mallorys:
        assert rest(url, "POST", f"/ai-agent/sessions/{session}/messages", "erin", {"message": "段取りを"})[0] == 200
        until_done(erins)  # pushed (and flushed) before the REST answer returned
        refused = sent(
            mallorys, session, "見せて", "steal-1"
        )  # mallory's first frame: the refusal, never erin's answer
        rest_status, rest_refusal = rest(
            url, "POST", f"/ai-agent/sessions/{session}/messages", "mallory", {"message": "x"}
        )
    assert refused["type"] == "error" and rest_status == 404
    assert refused["error"]["code"] == rest_refusal["error"]["code"] == "SESSION_NOT_FOUND"


def test_a_connection_gone_mid_answer_loses_nothing_and_is_deleted(
    served: tuple[LocalRunner, str], capsys: pytest.CaptureFixture[str]
) -> None:
    runner, url = served
    session = chat_session(url, "frank")
    # a connection API Gateway closed without $disconnect reaching the table: the push finds it gone (410)
    runner.aws.client("dynamodb").put_item(
        TableName="ConnectionsTable",
        Item={"connectionId": {"S": "gone-connection="}, "userId": {"S": "frank"}, "expiresAt": {"N": "4000000000"}},
    )
    with socket(url, "frank") as ws:
        assert sent(ws, session, "段取りを作りたい", "gone-1")["type"] == "accepted"
    capsys.readouterr()
    runner.deliver_all()  # the answer is written after the socket closed
    pushed = live_metrics(capsys.readouterr().out)
    status, stored = rest(url, "GET", f"/ai-agent/sessions/{session}/messages/2", "frank")
    assert status == 200 and stored["aiResponse"]["content"] and not stored["aiResponse"]["fallback"]
    assert connections_of(runner, "frank") == []  # $disconnect, and the push that met 410
    assert budget_counted(runner, "frank") == stored["usage"]["tokens"]  # the budget counts the answer once
    assert pushed == {("LiveConnectionsGone", "chat"): 1.0}  # the operator sees it; nothing posted, nothing failed


def test_a_resend_with_the_same_client_message_id_answers_the_same_accepted_and_makes_no_second_turn(
    served: tuple[LocalRunner, str],
) -> None:
    runner, url = served
    session = chat_session(url, "grace")
    with socket(url, "grace") as ws:
        first = sent(ws, session, "段取りを作りたい", "again-1")
    with socket(url, "grace") as ws:  # reconnected, sent again
        second = sent(ws, session, "段取りを作りたい", "again-1")
        reused = sent(ws, session, "別の内容", "again-1")
    assert first == second and first["type"] == "accepted"
    assert reused["type"] == "error" and reused["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    reports = runner.deliver_all()
    assert sum(report.deliveries for report in reports) == 1  # one turn for the worker, one model call
    status, history = rest(url, "GET", f"/ai-agent/sessions/{session}", "grace")
    assert status == 200 and [m["role"] for m in history["messages"]] == ["user", "assistant"]


def socket_chat_records(runner: LocalRunner) -> set[str]:
    items = runner.aws.client("dynamodb").scan(TableName="ChatIdempotencyTable")["Items"]
    return {item["id"]["S"] for item in items if item["id"]["S"].startswith("socket-chat#")}


def test_deleting_a_session_deletes_the_record_its_socket_message_was_kept_under(
    served: tuple[LocalRunner, str],
) -> None:
    """As a REST Idempotency-Key's: the record holds a copy of the answer, it goes with the session."""
    runner, url = served
    session = chat_session(url, "heidi")
    before = socket_chat_records(runner)
    with socket(url, "heidi") as ws:
        assert sent(ws, session, "段取りを作りたい", "kept-1")["type"] == "accepted"
    runner.deliver_all()
    (kept,) = socket_chat_records(runner) - before

    status, deleted = rest(url, "DELETE", f"/ai-agent/sessions/{session}", "heidi")

    assert status == 200 and deleted["deleted"]["retryRecords"] == 1, deleted
    assert kept not in socket_chat_records(runner)


def test_a_message_the_api_does_not_know_is_answered_with_the_one_action_it_takes(
    served: tuple[LocalRunner, str],
) -> None:
    with socket(served[1], "heidi") as ws:
        ws.send(json.dumps({"action": "subscribe"}))
        unknown = frame(ws)
        ws.send(json.dumps({"action": "sendMessage", "to": "chat", "sessionId": "s", "clientMessageId": "v-1"}))
        invalid = frame(ws)
    assert unknown["error"]["code"] == "UNKNOWN_ACTION" and "sendMessage" in unknown["error"]["message"]
    assert invalid["error"]["code"] == "VALIDATION_ERROR" and invalid["clientMessageId"] == "v-1"
    assert "message" in invalid["error"]["message"]
