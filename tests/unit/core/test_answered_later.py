"""What the chat and the interview do alike with a turn answered after its request
(``lambda_agents.answered_later``; docs/chat-and-templates.md#answers-that-do-not-fit-in-a-request,
docs/interview.md#turns-answered-later): the decision, the accepted turn, the queue message, and the
worker's delivery policy, each branch with fakes of a domain's parts."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from lambda_agents.answered_later import (
    POLL_S,
    CutShort,
    TurnWorker,
    WorkerMessage,
    WorkerParts,
    answer_later,
    now_or_later,
)
from lambda_agents.llm.policy import Deadline
from pydantic import Field, ValidationError

from tests.support.accepted_thing import thing_accepted
from tests.support.lambda_invocation import function_context
from tests.support.logs import captured_logs

MAX_RECEIVE_COUNT = 3


# -- now or later ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefer_later", "expected_s", "later"),
    [(False, 9.0, False), (False, 9.9, True), (True, 1.0, True), (True, 60.0, True)],
    ids=["fits: now", "does not fit: later", "preferred later though it fits", "preferred later, does not fit"],
)
def test_a_turn_goes_to_the_worker_when_the_client_prefers_it_or_it_does_not_fit(
    prefer_later: bool, expected_s: float, later: bool
) -> None:
    """It fits when its expected time is within what the deadline leaves, less the time to store it."""
    deadline = Deadline.after(10.0, lambda: 0.0)
    assert answer_later(prefer_later=prefer_later, expected_s=expected_s, deadline=deadline) is later


def test_without_a_deadline_every_turn_fits() -> None:
    assert answer_later(prefer_later=False, expected_s=3600.0, deadline=None) is False


@dataclass
class Steps:
    """A domain's two ways to end a turn, recording which ran."""

    cut: bool = False
    ran: list[str] = field(default_factory=list)

    def answer_now(self) -> str:
        self.ran.append("answer")
        if self.cut:
            raise CutShort()
        return "answered"

    def hand_over(self, cut: CutShort | None) -> str:
        self.ran.append("hand over" if cut is None else "hand over what was cut")
        return "accepted"


def test_a_turn_answered_later_is_handed_over_before_anything_is_answered() -> None:
    steps = Steps()
    assert now_or_later(steps.answer_now, steps.hand_over, later=True) == "accepted"
    assert steps.ran == ["hand over"]


def test_a_turn_answered_now_is_answered_in_the_request_and_not_handed_over() -> None:
    steps = Steps()
    assert now_or_later(steps.answer_now, steps.hand_over, later=False) == "answered"
    assert steps.ran == ["answer"]


def test_a_turn_the_deadline_cuts_in_the_request_is_handed_over_after_all() -> None:
    steps = Steps(cut=True)
    assert now_or_later(steps.answer_now, steps.hand_over, later=False) == "accepted"
    assert steps.ran == ["answer", "hand over what was cut"]


def test_any_other_failure_of_the_answer_is_not_a_hand_over() -> None:
    def failing() -> str:
        raise ConnectionError("storage down")

    steps = Steps()
    with pytest.raises(ConnectionError):
        now_or_later(failing, steps.hand_over, later=False)
    assert steps.ran == []


# -- the accepted turn -----------------------------------------------------------------------------


@pytest.mark.parametrize(("expected_s", "retry_after_s"), [(0.0, 1), (0.2, 1), (3.2, 4), (10.0, 10), (117.0, 10)])
def test_the_client_looks_first_when_the_turn_is_expected_and_at_least_every_ten_seconds(
    expected_s: float, retry_after_s: int
) -> None:
    assert thing_accepted("s", "t", expected_s).retry_after_s == retry_after_s


def test_the_202_body_names_the_turn_where_to_read_it_and_when() -> None:
    body = thing_accepted("s1", "t1", 61.3).as_response()
    assert list(body.items()) == [
        ("status", "pending"),
        ("sessionId", "s1"),
        ("thingId", "t1"),
        ("thingUrl", "/things/s1/t1"),
        ("retryAfterSeconds", 10),
        ("expectedSeconds", 62),
    ]


def test_a_turn_read_while_the_worker_writes_it_is_looked_at_again_soon() -> None:
    body = thing_accepted("s1", "t1", 61.3).as_response(polled=True)
    assert body["retryAfterSeconds"] == POLL_S == 2 and body["expectedSeconds"] == 62


# -- the queue message -----------------------------------------------------------------------------


class ThingMessage(WorkerMessage):
    session_id: str = Field(alias="sessionId", pattern=r"^[0-9a-f]{4}$")
    thing_id: int = Field(alias="thingId", ge=1)


def test_the_message_is_sent_as_camel_case_json_and_read_back_equal() -> None:
    message = ThingMessage(user_id="u-1", session_id="abcd", thing_id=3)
    assert json.loads(message.as_message()) == {"userId": "u-1", "sessionId": "abcd", "thingId": 3}
    assert ThingMessage.model_validate_json(message.as_message()) == message


@pytest.mark.parametrize(
    "body",
    [
        {"userId": "", "sessionId": "abcd", "thingId": 3},
        {"userId": "u" * 129, "sessionId": "abcd", "thingId": 3},
        {"sessionId": "abcd", "thingId": 3},
        {"userId": "u-1", "sessionId": "../x", "thingId": 3},
        {"userId": "u-1", "sessionId": "abcd", "thingId": 3, "text": "the turn's content"},
    ],
    ids=["no user", "a user id too long", "whose turn unsaid", "the domain's id refused", "an unknown field"],
)
def test_a_message_that_is_not_the_contract_is_refused(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ThingMessage.model_validate_json(json.dumps(body))


# -- the worker ------------------------------------------------------------------------------------


def sqs_record(body: str, *, delivery: int | None = 1, message_id: str = "m-1") -> SQSRecord:
    attributes = {} if delivery is None else {"ApproximateReceiveCount": str(delivery)}
    return SQSRecord({"messageId": message_id, "body": body, "attributes": attributes, "eventSource": "aws:sqs"})


SENT = ThingMessage(user_id="u-1", session_id="abcd", thing_id=3)


@dataclass
class Domain:
    """A domain's two worker parts: ``run`` (None: a normal end) and ``give_up`` (the domain's own
    outcome of a turn whose last delivery failed), recording what they were given."""

    result: str | None = "answered"
    error: Exception | None = None
    runs: list[ThingMessage] = field(default_factory=list)
    given_up: list[tuple[ThingMessage, Exception]] = field(default_factory=list)

    def run_pending(self, message: ThingMessage, deadline: Deadline | None) -> str | None:
        self.runs.append(message)
        if self.error is not None:
            raise self.error
        return self.result

    def give_up(self, message: ThingMessage, error: Exception) -> str | None:
        self.given_up.append((message, error))
        return "fallback"


WORKER = TurnWorker(
    ThingMessage, "thing answer", gives_up_as=": the fallback thing", records_metric="ChatAnswerRecords"
)


def work(domain: Domain, delivery: int | None = 1, body: str = SENT.as_message()) -> Any:
    return WORKER.work(sqs_record(body, delivery=delivery), MAX_RECEIVE_COUNT, domain, None)


def logged(buffer: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines() if line.startswith("{")]


def test_a_turn_the_worker_answers_ends_with_its_result() -> None:
    domain = Domain()
    outcome = work(domain)
    assert (outcome.result, outcome.gave_up) == ("answered", False)
    assert domain.runs == [SENT] and domain.given_up == []


def test_a_normal_end_ends_the_record_without_a_result_and_without_an_error() -> None:
    """Deleted or withdrawn meanwhile, answered already, a message naming no waiting turn: the
    domain logged why; the record is done, not delivered again."""
    domain = Domain(result=None)
    with captured_logs() as logs:
        outcome = work(domain, delivery=MAX_RECEIVE_COUNT)
    assert (outcome.result, outcome.gave_up) == (None, False) and domain.given_up == []
    assert [line for line in logged(logs) if line["level"] in ("ERROR", "CRITICAL")] == []


@pytest.mark.parametrize("delivery", [1, MAX_RECEIVE_COUNT - 1, None], ids=["first", "before the last", "uncounted"])
def test_a_failure_before_the_last_delivery_fails_the_record_to_be_delivered_again(delivery: int | None) -> None:
    failure = RuntimeError("the provider is down")
    domain = Domain(error=failure)
    with captured_logs() as logs, pytest.raises(RuntimeError) as raised:
        work(domain, delivery=delivery)
    assert raised.value is failure and domain.given_up == []
    (line,) = [line for line in logged(logs) if line["level"] == "ERROR"]
    assert (line["message"], line["error_type"]) == ("thing answer failed; redelivered", "RuntimeError")


@pytest.mark.parametrize("delivery", [MAX_RECEIVE_COUNT, MAX_RECEIVE_COUNT + 1], ids=["the last", "past the last"])
def test_a_failure_on_the_last_delivery_is_given_up_with_the_domains_own_outcome(delivery: int) -> None:
    """The dead-letter queue would keep a turn someone waits for: the domain ends it its own way
    (the chat's fallback answer, the interview's recorded 503), told the failure."""
    failure = RuntimeError("the provider is down")
    domain = Domain(error=failure)
    with captured_logs() as logs:
        outcome = work(domain, delivery=delivery)
    assert (outcome.result, outcome.gave_up) == ("fallback", True)
    assert domain.given_up == [(SENT, failure)]
    (line,) = [line for line in logged(logs) if line["level"] == "ERROR"]
    assert line["message"] == "thing answer failed on its last delivery: the fallback thing"


@pytest.mark.parametrize("delivery", [1, MAX_RECEIVE_COUNT])
def test_a_body_that_is_not_the_message_fails_with_nothing_run_or_given_up(delivery: int) -> None:
    """There is no turn to end: the record fails (into the dead-letter queue after its last delivery)."""
    domain = Domain()
    with pytest.raises(ValidationError):
        work(domain, delivery=delivery, body=json.dumps({"sessionId": "../x"}))
    assert domain.runs == [] and domain.given_up == []


def test_a_batch_reports_only_its_failed_records_for_sqs_to_deliver_again() -> None:
    event = {
        "Records": [
            {"messageId": "ok", "body": SENT.as_message(), "attributes": {}, "eventSource": "aws:sqs"},
            {"messageId": "bad", "body": "{}", "attributes": {}, "eventSource": "aws:sqs"},
        ]
    }
    domain = Domain()
    counted: list[Any] = []

    answer = WORKER.handle(
        event, function_context("ThingWorker", 60), WorkerParts(domain, MAX_RECEIVE_COUNT), counted.append
    )  # type: ignore[arg-type]

    assert answer == {"batchItemFailures": [{"itemIdentifier": "bad"}]} and domain.runs == [SENT]
    assert [(outcome.result, outcome.gave_up) for outcome in counted] == [("answered", False)]
