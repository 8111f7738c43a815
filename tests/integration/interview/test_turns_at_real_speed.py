"""An interview turn longer than API Gateway's 29 s still reaches the applicant as the agents'
reply. InterviewFunction hands it to InterviewTurnFunction (202 with the turn's Location); the
worker runs it with the same agents and commits it with its reply; the applicant reads the reply
there (docs/interview.md#turns-answered-later). Through both handlers, moto (DynamoDB, SQS,
EventBridge) and the real openai client against the fake server. The engine's prior pace is a
reasoning model's (25 s before each first token), so a turn of several calls is expected to take
minutes and is handed over; the fake answers at once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from lambda_agents.storage.run_steps import DynamoRunStepRecorder

from devtools.fake_openai import FakeOpenAIServer, Reply
from devtools.fake_openai.interview_replies import GREETING, asked, tool
from functions.interview_turns import app as turns_app
from tests.support.lambda_invocation import deliver_one
from tests.support.logs import captured_logs
from tests.support.model_speeds import INSTANT_SERVER

from .conftest import (
    APPLICANT,
    WITH_HOBBY,
    Answer,
    api_event,
    applicant_route,
    context,
    create,
    get_interview,
    interview_app,
    invoke,
    post_message,
    scan_all,
    use_fake_openai,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def turns_queue(aws: Any, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    # Visibility 0: a failed delivery is back at once (the test plays the redeliveries itself).
    url = boto3.client("sqs").create_queue(QueueName="InterviewTurnsQueue", Attributes={"VisibilityTimeout": "0"})[
        "QueueUrl"
    ]
    use_fake_openai(monkeypatch, fake_openai.base_url)
    monkeypatch.setenv("INTERVIEW_TURNS_QUEUE_URL", url)
    monkeypatch.setenv("OPENAI_FIRST_TOKEN_SECONDS", "25")  # a reasoning model: a turn takes minutes
    interview_app.dependencies.reset()
    turns_app.dependencies.reset()
    yield url
    turns_app.dependencies.reset()


def deliver(url: str, *, delivery: int = 1) -> dict[str, Any]:
    return deliver_one(url, "InterviewTurnsQueue", turns_app.lambda_handler, context(300), delivery=delivery)


def read(location: str, *, user: str = APPLICANT) -> Answer:
    _, session_id, _, turn_id = location.strip("/").split("/")
    event = api_event(
        "GET",
        location,
        user=user,
        path_parameters={"sessionId": session_id, "turnId": turn_id},
        resource="/interviews/{sessionId}/turns/{turnId}",
    )
    return invoke(event)


def test_a_turn_that_would_outlast_the_request_is_accepted_run_by_the_worker_and_read_at_its_location(
    aws: Any, fake_openai: FakeOpenAIServer, turns_queue: str
) -> None:
    session = str(create().body["sessionId"])
    accepted = post_message(session, "こんにちは、応募したいです。")
    assert accepted.status == 202, accepted.body
    location = accepted.headers["Location"]
    assert location == accepted.body["turnUrl"] and location.startswith(f"/interviews/{session}/turns/")
    assert fake_openai.requests == []
    assert read(location).status == 202
    busy = post_message(session, "もしもし")
    assert (busy.status, busy.body["error"]["code"]) == (409, "TURN_IN_PROGRESS")

    fake_openai.enqueue(*asked(GREETING))
    assert deliver(turns_queue) == {"batchItemFailures": []}
    reply = read(location)
    assert reply.status == 200, reply.body
    assert (reply.body["reply"], reply.body["replyKind"], reply.body["currentAgent"]) == (
        GREETING,
        "question",
        "greeter",
    )
    transcript = get_interview(session).body["messages"]
    assert [m["role"] for m in transcript] == ["user", "assistant"] and transcript[1]["content"] == GREETING


def test_a_redelivered_turn_runs_once(aws: Any, fake_openai: FakeOpenAIServer, turns_queue: str) -> None:
    session = str(create().body["sessionId"])
    assert post_message(session, "こんにちは").status == 202
    sqs = boto3.client("sqs")
    body = sqs.receive_message(QueueUrl=turns_queue)["Messages"][0]["Body"]
    sqs.send_message(QueueUrl=turns_queue, MessageBody=body)
    fake_openai.enqueue(*asked(GREETING))
    assert deliver(turns_queue) == {"batchItemFailures": []}
    assert deliver(turns_queue) == {"batchItemFailures": []}
    assert len(fake_openai.requests) == 2  # one turn: the ask and its QuickCheck
    assert len(get_interview(session).body["messages"]) == 2


def test_a_worker_that_fails_on_its_last_delivery_records_a_503_and_the_applicant_may_send_again(
    aws: Any, fake_openai: FakeOpenAIServer, turns_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = str(create().body["sessionId"])
    location = post_message(session, "こんにちは").headers["Location"]

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug in the worker")

    monkeypatch.setattr(turns_app.dependencies().turns, "run_pending", broken)
    assert deliver(turns_queue, delivery=1)["batchItemFailures"]  # redelivered while deliveries are left
    assert deliver(turns_queue, delivery=5) == {"batchItemFailures": []}  # INTERVIEW_TURNS_MAX_RECEIVE_COUNT
    failed = read(location)
    assert (failed.status, failed.body["error"]["code"]) == (503, "MODEL_UNAVAILABLE")
    assert int(failed.headers["Retry-After"]) >= 1
    assert post_message(session, "もう一度").status == 202  # the session takes messages again


def test_the_same_idempotency_key_gives_the_same_accepted_turn(aws: Any, turns_queue: str) -> None:
    session = str(create().body["sessionId"])
    first = post_message(session, "こんにちは", key="t-1")
    again = post_message(session, "こんにちは", key="t-1")
    assert first.status == again.status == 202 and first.body == again.body


def test_another_users_turn_is_not_found(aws: Any, turns_queue: str) -> None:
    session = str(create().body["sessionId"])
    location = post_message(session, "こんにちは").headers["Location"]
    assert read(location, user="applicant-0002").status == 404
    missing = read(f"/interviews/{session}/turns/1795555555555-0123abcd")
    assert (missing.status, missing.body["error"]["code"]) == (404, "TURN_NOT_FOUND")


def test_without_a_worker_queue_a_turn_runs_in_its_request_as_before(
    aws: Any, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_openai(monkeypatch, fake_openai.base_url)
    session = str(create().body["sessionId"])
    fake_openai.enqueue(*asked(GREETING))
    answer = post_message(session, "こんにちは")
    assert answer.status == 200 and answer.body["reply"] == GREETING
    assert context(1) is not None


def logged(buffer: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines() if line.startswith("{")]


def leftovers(aws: Any, session: str) -> dict[str, list[dict[str, Any]]]:
    """Every item, in every table, that holds the session's id."""
    found = {name: [item for item in items if session in str(item)] for name, items in scan_all(aws).items()}
    return {name: hits for name, hits in found.items() if hits}


def test_a_skip_while_a_turn_is_with_the_worker_waits_for_it_like_a_correction(aws: Any, turns_queue: str) -> None:
    session = str(create(WITH_HOBBY).body["sessionId"])
    assert post_message(session, "こんにちは").status == 202

    skipped = applicant_route("POST", session, "skip", field_id="hobby")
    corrected = applicant_route("POST", session, "correction", {"text": "5年です"}, field_id="experience")

    assert (skipped.status, skipped.body["error"]["code"]) == (409, "TURN_IN_PROGRESS")
    assert (corrected.status, corrected.body["error"]["code"]) == (409, "TURN_IN_PROGRESS")


def test_an_interview_withdrawn_while_the_worker_runs_its_turn_ends_the_turn_as_a_normal_outcome(
    aws: Any, fake_openai: FakeOpenAIServer, turns_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Withdrawal is the applicant's right at any moment: the worker's commit has nothing to commit
    to, and that is no failure (no ERROR, no redelivery that would run the agents again)."""
    session = str(create().body["sessionId"])
    assert post_message(session, "こんにちは").status == 202
    subagents = turns_app.dependencies().turns.orchestrator.built.env.subagents
    check = subagents.quick_check

    def withdrawn_meanwhile(*args: Any, **kwargs: Any) -> Any:
        # While the ask tool runs: its RunStep is recorded as started, and is finished after this.
        assert applicant_route("DELETE", session).status == 204
        return check(*args, **kwargs)

    monkeypatch.setattr(subagents, "quick_check", withdrawn_meanwhile)
    fake_openai.enqueue(*asked(GREETING))
    with captured_logs() as logs:
        assert deliver(turns_queue) == {"batchItemFailures": []}  # done: not delivered again

    assert [line["message"] for line in logged(logs) if line["level"] in ("ERROR", "CRITICAL")] == []
    assert any(line["message"] == "interview turn needs no run" for line in logged(logs))
    assert boto3.client("sqs").receive_message(QueueUrl=turns_queue).get("Messages") is None
    assert leftovers(aws, session) == {}  # the step finished after the withdrawal is not written back


@pytest.mark.parametrize("worker", ["still running", "gave up", "finished"])
def test_a_withdrawal_deletes_the_retry_record_of_a_turn_handed_to_the_worker_whatever_became_of_it(
    aws: Any, fake_openai: FakeOpenAIServer, turns_queue: str, monkeypatch: pytest.MonkeyPatch, worker: str
) -> None:
    """The 202 is kept under the Idempotency-Key from the hand-over on; the withdrawal deletes it
    (docs/interview.md#skip-correction-and-withdrawal) in each state the turn can be in."""
    session = str(create().body["sessionId"])
    assert post_message(session, "こんにちは", key="t-1").status == 202
    assert scan_all(aws)["InterviewIdempotencyTable"] != []
    if worker == "gave up":

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("a bug in the worker")

        monkeypatch.setattr(turns_app.dependencies().turns, "run_pending", broken)
        assert deliver(turns_queue, delivery=5) == {"batchItemFailures": []}
    elif worker == "finished":
        fake_openai.enqueue(*asked(GREETING))
        assert deliver(turns_queue) == {"batchItemFailures": []}

    assert applicant_route("DELETE", session).status == 204

    assert scan_all(aws)["InterviewIdempotencyTable"] == []
    assert leftovers(aws, session) == {}


def test_after_the_worker_gives_up_a_retry_with_the_same_key_runs_the_turn_again(
    aws: Any, fake_openai: FakeOpenAIServer, turns_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 202 is kept under the key while its turn may still be answered; once the worker gave the
    turn up (it reads 503 "send it again"), replaying it would loop a retrying client for 24 h. The
    retry runs the turn again instead, as after a failed request."""
    session = str(create().body["sessionId"])
    first = post_message(session, "こんにちは", key="t-1")
    assert first.status == 202
    with monkeypatch.context() as patch:
        patch.setattr(turns_app.dependencies().turns, "run_pending", failing)
        assert deliver(turns_queue, delivery=5) == {"batchItemFailures": []}
    assert read(first.headers["Location"]).status == 503

    again = post_message(session, "こんにちは", key="t-1")

    assert again.status == 202 and again.body["turnId"] != first.body["turnId"], again.body
    fake_openai.enqueue(*asked(GREETING))
    assert deliver(turns_queue) == {"batchItemFailures": []}
    assert read(again.headers["Location"]).body["reply"] == GREETING
    assert post_message(session, "こんにちは", key="t-1").body == again.body  # kept again: no third run
    assert len(scan_all(aws)["InterviewIdempotencyTable"]) == 1


def failing(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("a bug in the worker")


# A first token that never comes (only the request's deadline ends the wait). The request's Lambda
# has 12 s and keeps 9 s for the model calls: the first calls, which a busy machine can slow to
# seconds (and the pace the turn learns from them), still leave the late call room to be sent.
LATE_S = 86_400.0
REQUEST_TIMEOUT_S = 12
CUTS = {
    # The greeter calls ask at once; its QuickCheck's first token comes too late: the turn is cut
    # inside its first tool call (the step is recorded, then aborted).
    "inside the first tool call": (
        [tool("ask", message=GREETING), Reply(content='{"passed": true}', first_token_s=LATE_S)],
        [("ask", "error")],
        1,  # the Greeter's ask: its answer came whole
    ),
    # set_language succeeds, then the greeter's next call comes too late: the turn is cut after it.
    "after a tool call that succeeded": (
        [tool("set_language", language="ja"), Reply(content="遅い回答", first_token_s=LATE_S)],
        [("set_language", "success")],
        1,  # the Greeter's set_language
    ),
}


def emitted_metrics(capsys: pytest.CaptureFixture[str], name: str) -> list[float]:
    """Every value of ``name`` in the EMF lines the handlers printed so far."""
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    return [value for line in lines if name in line for value in line[name]]


def max_tokens_of(body: dict[str, Any]) -> int:
    return int(body.get("max_completion_tokens") or body["max_tokens"])


def session_item(aws: Any, session: str) -> dict[str, Any]:
    key = {"pk": f"SESSION#{session}", "sk": "SESSION"}
    return dict(boto3.resource("dynamodb").Table("InterviewsTable").get_item(Key=key)["Item"])


@pytest.mark.parametrize("cut", list(CUTS))
def test_a_turn_the_deadline_cuts_after_tool_calls_is_run_by_the_worker_to_a_committed_turn(
    aws: Any,
    fake_openai: FakeOpenAIServer,
    turns_queue: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cut: str,
) -> None:
    """Planned to fit (the instant prior), the turn makes its first tool call(s) at once, then a model
    call comes too late for the request's deadline: nothing is committed, the turn goes to the worker
    with RunSteps already recorded outside the transaction. The worker runs the same turn id to its
    commit; every RunStep is written once, none is lost, and the worker's run makes only the calls the
    request did not complete: those it did are taken from the request's record, and the interview's
    usageTotal is what the provider billed (docs/interview.md#turns-answered-later)."""
    monkeypatch.setenv("OPENAI_FIRST_TOKEN_SECONDS", f"{INSTANT_SERVER.first_token_s:g}")
    # The first token's limit lies past the request's deadline: the deadline cuts the late call.
    monkeypatch.setenv("OPENAI_FIRST_TOKEN_TIMEOUT_SECONDS", "30")
    interview_app.dependencies.reset()
    turns_app.dependencies.reset()
    in_the_request, recorded_by_the_request, completed = CUTS[cut]
    session = str(create().body["sessionId"])
    fake_openai.enqueue(*in_the_request)

    accepted = post_message(session, "こんにちは", timeout_s=REQUEST_TIMEOUT_S)

    assert accepted.status == 202, accepted.body
    turn = accepted.body["turnId"]
    assert read(accepted.headers["Location"]).status == 202
    assert [m["role"] for m in get_interview(session).body["messages"]] == []  # nothing of the turn committed
    calls_in_the_request = len(fake_openai.requests)
    assert calls_in_the_request == len(in_the_request)
    # The turn's calls from its start, less the ones the request completed (taken from its record).
    whole_turn = [*([tool("set_language", language="ja")] if "succeeded" in cut else []), *asked(GREETING)]
    worker_calls = whole_turn[completed:]
    fake_openai.enqueue(*worker_calls)

    with captured_logs() as logs:
        assert deliver(turns_queue) == {"batchItemFailures": []}  # done on its first delivery

    assert [line["message"] for line in logged(logs) if line["level"] in ("ERROR", "CRITICAL")] == []
    reply = read(accepted.headers["Location"])
    assert reply.status == 200, reply.body
    assert (reply.body["reply"], reply.body["replyKind"]) == (GREETING, "question")
    assert [m["content"] for m in get_interview(session).body["messages"]] == ["こんにちは", GREETING]
    fake_openai.assert_script_consumed()
    assert len(fake_openai.requests) - calls_in_the_request == len(whole_turn) - completed  # each call once
    # Each Greeter call the model answered is counted once, by the function that made it: the request
    # its completed ones as it hands over, the worker those it sent to the model, not those taken from
    # the record; the ask's QuickCheck, last, is a sub-session.
    assert emitted_metrics(capsys, "InterviewModelCalls") == [completed, len(worker_calls) - 1]
    # What the provider billed, and for the call cut before its first token the product's safe side:
    # its whole max_tokens (docs/cost.md#what-a-cut-stream-costs; the fake stops when the client goes).
    cut_calls = [record for record in fake_openai.ledger() if record.ended != "complete"]
    assert [record.completion_tokens for record in cut_calls] == [0]
    safe_side = max_tokens_of(fake_openai.requests[cut_calls[0].request])
    billed = fake_openai.billed_prompt_tokens() + fake_openai.billed_completion_tokens()
    assert session_item(aws, session)["usageTotal"]["totalTokens"] == billed + safe_side
    steps = DynamoRunStepRecorder("InterviewsTable").for_session(session)
    assert [step["sk"] for step in steps] == [f"{turn}#{seq:03d}" for seq in range(1, len(steps) + 1)]
    by_the_worker = [(step["toolName"], step["output"]["status"]) for step in steps[len(recorded_by_the_request) :]]
    assert [(step["toolName"], step["output"]["status"]) for step in steps] == recorded_by_the_request + by_the_worker
    assert by_the_worker == [(name, "success") for name in (["set_language"] if "succeeded" in cut else []) + ["ask"]]
    assert all(step["status"] == "finished" for step in steps)
    # The request's record of its calls holds the applicant's words: withdrawn with the rest.
    assert any(item["sk"] == f"CALLS#{turn}" for item in leftovers(aws, session)["InterviewsTable"])
    assert applicant_route("DELETE", session).status == 204
    assert leftovers(aws, session) == {}


def test_a_turn_the_client_prefers_to_read_later_is_run_by_the_worker_and_read_at_its_location(
    aws: Any, fake_openai: FakeOpenAIServer, turns_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Prefer: respond-async`` hands over even a turn that would fit (the instant prior)."""
    monkeypatch.setenv("OPENAI_FIRST_TOKEN_SECONDS", f"{INSTANT_SERVER.first_token_s:g}")
    interview_app.dependencies.reset()
    session = str(create().body["sessionId"])
    event = api_event(
        "POST",
        f"/interviews/{session}/messages",
        {"text": "こんにちは"},
        headers={"Prefer": "respond-async"},
        path_parameters={"sessionId": session},
        resource="/interviews/{sessionId}/messages",
    )

    accepted = invoke(event)

    assert accepted.status == 202 and accepted.headers["Preference-Applied"] == "respond-async"
    assert fake_openai.requests == []
    fake_openai.enqueue(*asked(GREETING))
    assert deliver(turns_queue) == {"batchItemFailures": []}
    reply = read(accepted.headers["Location"])
    assert reply.status == 200 and reply.body["reply"] == GREETING
    assert len(fake_openai.requests) == 2
