"""A chat answer longer than API Gateway's 29 s still reaches the user as the model's answer
(docs/chat-and-templates.md#answers-that-do-not-fit-in-a-request).

ChatFunction answers in the request when the whole answer (1,200 tokens) fits at the model's pace;
otherwise it stores the message, hands the turn to ChatAnswerFunction through ChatAnswersQueue and
answers 202 with the answer's Location; the client reads it there once written. Through both
handlers, moto (DynamoDB, SQS) and the real openai client against the fake server.

The engine's prior pace is a slow hour's 20 tokens/s (so 1,200 tokens need a minute: the turn is
handed over), while the fake server answers fast, so the worker's answer takes a moment here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from lambda_agents.llm.types import estimate_tokens

from devtools.fake_openai import FakeOpenAIServer, Reply
from functions.chat_answers import app as answers_app
from tests.support.lambda_invocation import deliver_one
from tests.support.logs import captured_logs

from .chat_api import Answer, api_event, call, chat, chat_app, context, items, send, start_session, use_fake_openai

pytestmark = pytest.mark.integration

ANSWER = "中途採用の段取りを五つの工程に分けました。" * 60  # ~1,000 tokens of prose
MESSAGE = "エンジニア1名の中途採用の段取りを作りたいです"


@pytest.fixture
def answers_queue(aws: Any, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="ChatAnswersQueue")["QueueUrl"]
    use_fake_openai(monkeypatch, fake_openai.base_url)
    monkeypatch.setenv("CHAT_ANSWERS_QUEUE_URL", url)
    monkeypatch.setenv("OPENAI_TOKENS_PER_SECOND", "20")  # a slow hour: 1,200 tokens take a minute
    chat_app.dependencies.reset()
    answers_app.dependencies.reset()
    yield url
    answers_app.dependencies.reset()


def deliver(url: str, *, delivery: int = 1) -> dict[str, Any]:
    """What Lambda's poller does: the queue's message to ChatAnswerFunction; then deleted if it succeeded."""
    worker = context("ChatAnswerFunction", 180)
    return deliver_one(url, "ChatAnswersQueue", answers_app.lambda_handler, worker, delivery=delivery)


def read(location: str) -> Answer:
    return chat("GET", location)


def user_message(aws: Any, seq: int) -> dict[str, Any]:
    (message,) = [m for m in items(aws, "ChatTable", "SESSION#") if m["sk"] == f"MSG#{seq:08d}"]
    return message


def logged(buffer: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines() if line.startswith("{")]


def stored(aws: Any) -> list[tuple[int, str, str]]:
    return [(m["seq"], m["role"], m["kind"]) for m in items(aws, "ChatTable", "SESSION#") if m["sk"].startswith("MSG#")]


def test_an_answer_that_does_not_fit_in_29_s_is_accepted_then_read_at_its_location_as_the_models_answer(
    aws: Any, fake_openai: FakeOpenAIServer, answers_queue: str
) -> None:
    session = start_session()
    accepted = send(session, MESSAGE)
    assert accepted.status == 202, accepted.body
    location = accepted.headers["Location"]
    assert location == f"/ai-agent/sessions/{session}/messages/2" == accepted.body["answerUrl"]
    assert 1 <= int(accepted.headers["Retry-After"]) <= 10 and accepted.body["expectedSeconds"] >= 60
    assert fake_openai.requests == [] and stored(aws) == [(1, "user", "message")]

    waiting = read(location)
    assert waiting.status == 202 and waiting.headers["Location"] == location
    assert "answerPendingSince" in user_message(aws, 1)

    fake_openai.enqueue(Reply(content=ANSWER, tokens_per_s=500.0))
    assert deliver(answers_queue) == {"batchItemFailures": []}
    answered = read(location)
    assert answered.status == 200, answered.body
    ai = answered.body["aiResponse"]
    assert (ai["seq"], ai["role"], ai["fallback"], ai["truncated"]) == (2, "assistant", False, False)
    assert ai["content"] == ANSWER and answered.body["usage"]["completionTokens"] == estimate_tokens(ANSWER)
    assert [m["seq"] for m in answered.body["conversation"]] == [1, 2]
    assert stored(aws) == [(1, "user", "message"), (2, "assistant", "answer")]
    assert "answerPendingSince" not in user_message(aws, 1)  # answered: it waits no more


def test_a_redelivered_turn_is_not_answered_twice(aws: Any, fake_openai: FakeOpenAIServer, answers_queue: str) -> None:
    session = start_session()
    assert send(session, MESSAGE).status == 202
    body = boto3.client("sqs").receive_message(QueueUrl=answers_queue, VisibilityTimeout=0)["Messages"][0]["Body"]
    boto3.client("sqs").send_message(QueueUrl=answers_queue, MessageBody=body)  # delivered twice
    fake_openai.enqueue(Reply(content=ANSWER))
    assert deliver(answers_queue) == {"batchItemFailures": []}
    assert deliver(answers_queue) == {"batchItemFailures": []}
    assert len(fake_openai.requests) == 1 and stored(aws) == [(1, "user", "message"), (2, "assistant", "answer")]


def test_a_client_that_prefers_to_read_the_answer_later_gets_202_even_for_a_short_answer(
    aws: Any, fake_openai: FakeOpenAIServer, answers_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_TOKENS_PER_SECOND", "10000")
    chat_app.dependencies.reset()
    session = start_session()
    accepted = send(session, MESSAGE, headers={"Prefer": "respond-async, wait=10"})
    assert accepted.status == 202 and accepted.headers["Preference-Applied"] == "respond-async"
    assert fake_openai.requests == []

    fake_openai.enqueue(Reply(content=ANSWER))
    assert deliver(answers_queue) == {"batchItemFailures": []}
    answered = read(accepted.headers["Location"])
    assert answered.status == 200 and answered.body["aiResponse"]["content"] == ANSWER
    assert stored(aws) == [(1, "user", "message"), (2, "assistant", "answer")]


def test_an_answer_slower_than_planned_is_handed_over_and_its_cut_attempt_stops_the_provider(
    aws: Any, fake_openai: FakeOpenAIServer, answers_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planned to fit (the prior says 1,000 tokens/s) but written at 100 tokens/s: the request's
    deadline (a 9 s Lambda keeps 6 s for the model) cuts it; the worker answers it whole. The 6 s
    leave the plan's ~1 s room however long a busy machine takes over the request's own work
    before the call, and the answer's 10 s do not fit in them."""
    monkeypatch.setenv("OPENAI_TOKENS_PER_SECOND", "1000")
    monkeypatch.setenv("OPENAI_FIRST_TOKEN_SECONDS", "0.1")
    chat_app.dependencies.reset()
    answers_app.dependencies.reset()
    session = start_session()
    fake_openai.enqueue(Reply(content=ANSWER, tokens_per_s=100.0), Reply(content=ANSWER))

    accepted = send(session, MESSAGE, lambda_timeout_s=9)

    assert accepted.status == 202, accepted.body
    assert stored(aws) == [(1, "user", "message")]  # the cut answer is not stored
    assert deliver(answers_queue) == {"batchItemFailures": []}
    assert read(accepted.headers["Location"]).body["aiResponse"]["content"] == ANSWER
    cut, whole = sorted(fake_openai.billing, key=lambda record: record.request)
    assert cut.ended == "client_closed" and cut.completion_tokens < whole.completion_tokens


def test_the_same_idempotency_key_gives_the_same_accepted_turn_and_one_stored_message(
    aws: Any, fake_openai: FakeOpenAIServer, answers_queue: str
) -> None:
    session = start_session()
    first = send(session, MESSAGE, headers={"Idempotency-Key": "k-1"})
    again = send(session, MESSAGE, headers={"Idempotency-Key": "k-1"})
    assert first.status == again.status == 202 and first.body == again.body
    assert stored(aws) == [(1, "user", "message")]
    fake_openai.enqueue(Reply(content=ANSWER))
    deliver(answers_queue)
    assert read(first.headers["Location"]).status == 200
    assert send(session, MESSAGE, headers={"Idempotency-Key": "k-1"}).body == first.body  # no third turn
    assert len(stored(aws)) == 2


def test_a_queue_that_cannot_take_the_turn_gives_fallback_d_at_once_with_nothing_left_waiting(
    aws: Any, fake_openai: FakeOpenAIServer, answers_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHAT_ANSWERS_QUEUE_URL", answers_queue.replace("ChatAnswersQueue", "NoSuchQueue"))
    chat_app.dependencies.reset()
    answer = send(start_session(), MESSAGE)
    assert answer.status == 200 and answer.body["aiResponse"]["fallback"] is True
    assert stored(aws) == [(1, "user", "message"), (2, "assistant", "fallback")]


def test_on_the_last_delivery_a_failing_worker_stores_fallback_d_so_the_turn_does_not_wait_for_ever(
    aws: Any, fake_openai: FakeOpenAIServer, answers_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = start_session()
    accepted = send(session, MESSAGE)
    worker = answers_app.dependencies().turns

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug in the worker")

    monkeypatch.setattr(worker, "run_pending", broken)
    assert deliver(answers_queue, delivery=5) == {"batchItemFailures": []}  # CHAT_ANSWERS_MAX_RECEIVE_COUNT
    answer = read(accepted.headers["Location"])
    assert answer.status == 200 and answer.body["aiResponse"]["fallback"] is True


def test_a_malformed_worker_message_fails_into_the_dead_letter_queue(aws: Any, answers_queue: str) -> None:
    boto3.client("sqs").send_message(QueueUrl=answers_queue, MessageBody=json.dumps({"sessionId": "../x"}))
    result = deliver(answers_queue)
    assert len(result["batchItemFailures"]) == 1 and items(aws, "ChatTable", "SESSION#") == []


def test_reading_another_users_answer_or_one_that_does_not_exist_is_404(aws: Any, answers_queue: str) -> None:
    session = start_session()
    location = send(session, MESSAGE).headers["Location"]
    assert call(chat_app, "GET", location, user="someone-else").status == 404
    missing = chat("GET", f"/ai-agent/sessions/{session}/messages/4")
    assert (missing.status, missing.body["error"]["code"]) == (404, "MESSAGE_NOT_FOUND")


def test_a_chat_deleted_while_the_worker_answers_ends_the_turn_as_a_normal_outcome(
    aws: Any, fake_openai: FakeOpenAIServer, answers_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user may delete a chat at any moment: the worker's answer has nowhere to go, and that is
    no failure (no ERROR, no redelivery that would call the model again, nothing left stored)."""
    session = start_session()
    assert send(session, MESSAGE).status == 202
    conversation = answers_app.dependencies().turns.answering.conversation
    ask = conversation.process_message

    def deleted_meanwhile(*args: Any, **kwargs: Any) -> Any:
        answer = ask(*args, **kwargs)
        assert chat("DELETE", f"/ai-agent/sessions/{session}").status == 200
        return answer

    monkeypatch.setattr(conversation, "process_message", deleted_meanwhile)
    fake_openai.enqueue(Reply(content=ANSWER))
    with captured_logs() as logs:
        assert deliver(answers_queue) == {"batchItemFailures": []}  # done: not delivered again

    lines = logged(logs)
    assert [line["message"] for line in lines if line["level"] in ("ERROR", "CRITICAL")] == []
    assert {"message": "chat turn needs no answer", "reason": "session deleted while it was answered"}.items() <= (
        next(line for line in lines if line["message"] == "chat turn needs no answer").items()
    )
    assert items(aws, "ChatTable", "SESSION#") == []
    assert boto3.client("sqs").receive_message(QueueUrl=answers_queue).get("Messages") is None


def test_a_worker_message_naming_an_answer_is_dropped_and_the_session_takes_messages_as_before(
    aws: Any, fake_openai: FakeOpenAIServer, answers_queue: str
) -> None:
    """A queue message is input too: one whose userSeq names the assistant's message (no request
    sends that) calls no model and writes nothing, so the session's count stays right."""
    session = start_session()
    assert send(session, MESSAGE).status == 202
    fake_openai.enqueue(Reply(content=ANSWER))
    assert deliver(answers_queue) == {"batchItemFailures": []}
    forged = {"sessionId": session, "userId": "user-1", "userSeq": 2}
    boto3.client("sqs").send_message(QueueUrl=answers_queue, MessageBody=json.dumps(forged))

    with captured_logs() as logs:
        assert deliver(answers_queue) == {"batchItemFailures": []}  # dropped, not into the dead-letter queue

    assert len(fake_openai.requests) == 1 and stored(aws) == [(1, "user", "message"), (2, "assistant", "answer")]
    assert any(line.get("reason") == "no user's message of that seq" for line in logged(logs))
    later = send(session, MESSAGE, headers={"Prefer": "respond-async"})
    assert (later.status, later.body["messageSeq"]) == (202, 3), later.body  # not 409: the count is right


def test_after_the_worker_stores_the_fallback_answer_a_retry_with_the_same_key_asks_the_model_again(
    aws: Any, fake_openai: FakeOpenAIServer, answers_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 202 is kept under the key while its turn may still be answered; once the worker ended
    the turn with the fallback answer, replaying it would send a retrying client to "try again
    later" for 24 h. The retry asks the model again instead, as a new turn, as after a fallback
    answer given in the request (docs/chat-and-templates.md#idempotent-retries)."""
    session = start_session()
    first = send(session, MESSAGE, headers={"Idempotency-Key": "k-1"})
    assert first.status == 202
    with monkeypatch.context() as patch:
        patch.setattr(answers_app.dependencies().turns, "run_pending", failing)
        assert deliver(answers_queue, delivery=5) == {"batchItemFailures": []}  # the fallback answer
    assert read(first.headers["Location"]).body["aiResponse"]["fallback"] is True

    again = send(session, MESSAGE, headers={"Idempotency-Key": "k-1"})

    assert again.status == 202 and (again.body["messageSeq"], again.body["answerSeq"]) == (3, 4), again.body
    fake_openai.enqueue(Reply(content=ANSWER))
    assert deliver(answers_queue) == {"batchItemFailures": []}
    assert read(again.headers["Location"]).body["aiResponse"]["content"] == ANSWER
    assert send(session, MESSAGE, headers={"Idempotency-Key": "k-1"}).body == again.body  # kept again: no third turn
    assert stored(aws) == [
        (1, "user", "message"),
        (2, "assistant", "fallback"),
        (3, "user", "message"),
        (4, "assistant", "answer"),
    ]
    assert aws.scan(TableName="ChatIdempotencyTable")["Count"] == 1


def test_a_turn_ended_before_its_202_is_kept_under_the_key_still_asks_the_model_again_on_a_retry(
    aws: Any, fake_openai: FakeOpenAIServer, answers_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Powertools stores the 202 when the request returns; a fast worker may have ended the turn
    with the fallback answer before that. Nothing the worker could have deleted then would hold."""
    session = start_session()
    handover = chat_app.dependencies().turns.handover
    assert handover is not None
    queue = handover.queue
    hand_over = queue.send

    def worker_first(turn: Any) -> None:
        hand_over(turn)
        with monkeypatch.context() as patch:
            patch.setattr(answers_app.dependencies().turns, "run_pending", failing)
            assert deliver(answers_queue, delivery=5) == {"batchItemFailures": []}

    monkeypatch.setattr(queue, "send", worker_first)
    first = send(session, MESSAGE, headers={"Idempotency-Key": "k-1"})
    monkeypatch.setattr(queue, "send", hand_over)
    assert first.status == 202 and read(first.headers["Location"]).body["aiResponse"]["fallback"] is True

    again = send(session, MESSAGE, headers={"Idempotency-Key": "k-1"})

    assert again.status == 202 and again.body["messageSeq"] == 3, again.body


def failing(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("a bug in the worker")


# How API Gateway fills a request's event, by the URL the client called (``api.called_path``):
# on the execute-api URL ``path`` drops the stage and ``requestContext.path`` keeps it; behind a
# custom domain whose API mapping has a base path, both keep the base path.
CALLED_AS = {"execute_api_stage": ("/v1", ""), "custom_domain_base_path": ("/agents", "/agents")}


@pytest.fixture
def mapped_as(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    base, api_base_path = CALLED_AS[request.param]
    monkeypatch.setenv("API_BASE_PATH", api_base_path)
    chat_app.app.cold_start()
    yield base
    monkeypatch.delenv("API_BASE_PATH")
    chat_app.app.cold_start()


def as_called(method: str, called: str, base: str, body: Any = None, **kwargs: Any) -> Answer:
    path = called.removeprefix(base) if base == "/v1" else called
    event = api_event(method, path, body, **kwargs)
    event["requestContext"]["path"] = called
    return Answer.of(chat_app.lambda_handler(event, context()))


@pytest.mark.parametrize("mapped_as", CALLED_AS, indirect=True)
def test_the_answers_location_is_under_the_stage_or_base_path_the_client_called_and_reads_the_answer(
    aws: Any, fake_openai: FakeOpenAIServer, answers_queue: str, mapped_as: str
) -> None:
    base = mapped_as
    session = start_session()

    accepted = as_called("POST", f"{base}/ai-agent/sessions/{session}/messages", base, {"message": MESSAGE})

    assert accepted.status == 202, accepted.body
    location = accepted.headers["Location"]
    assert location == accepted.body["answerUrl"] == f"{base}/ai-agent/sessions/{session}/messages/2"
    waiting = as_called("GET", location, base)
    assert waiting.status == 202 and waiting.headers["Location"] == location
    fake_openai.enqueue(Reply(content=ANSWER, tokens_per_s=500.0))
    assert deliver(answers_queue) == {"batchItemFailures": []}
    answered = as_called("GET", location, base)
    assert answered.status == 200 and answered.body["aiResponse"]["content"] == ANSWER
