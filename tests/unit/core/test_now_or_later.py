"""The route bodies of a turn answered now or later (``lambda_agents.api.turn_routes``), which the chat's
message routes and the interview's message, correction and turn routes share: 200 with the answer, or
202 with where (under the stage or base path the client called) and when to read it; the POST with or
without an ``Idempotency-Key`` and ``Prefer: respond-async``; the GET at the ``Location``; and whether a
202 kept under a key still holds. A fake resolver, a fake retry-safe call, no patching."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from lambda_agents.api.turn_routes import TurnRoutes, accepted_turn_ended
from lambda_agents.errors import DomainError
from lambda_agents.response_model import ResponseModel

from tests.support.accepted_thing import thing_accepted


class ThingAnswer(ResponseModel):
    thing: str


class ThingPending(ResponseModel):
    status: Literal["pending"]
    session_id: str
    thing_id: str
    thing_url: str
    retry_after_seconds: int
    expected_seconds: int


@dataclass
class Resolver:
    """What the route's resolver tells: the called stage or base path, the invocation's context."""

    called_base_path: str = "/v1"
    lambda_context: object = field(default_factory=object)


@dataclass
class RetrySafe:
    """An IdempotentCall that answers ``answer`` and records what it was given."""

    answer: dict[str, Any]
    contexts: list[object] = field(default_factory=list)
    payloads: list[dict[str, Any]] = field(default_factory=list)

    def register_lambda_context(self, context: Any) -> None:
        self.contexts.append(context)

    def __call__(self, payload: dict[str, Any]) -> dict[str, Any]:
        self.payloads.append(payload)
        return self.answer


def unkeyed() -> RetrySafe:
    raise AssertionError("a request without an Idempotency-Key does not go through the retry-safe call")


def things(resolver: Resolver | None = None) -> TurnRoutes[ThingAnswer, ThingPending]:
    return TurnRoutes(
        ThingAnswer,
        ThingPending,
        url_field="thingUrl",
        request=resolver or Resolver(),
        answered_description="the thing",
        pending_description="accepted",
    )


TURN = {"userId": "u-1", "sessionId": "s1", "text": "hello"}
ANSWERED = {"thing": "done"}
PENDING = thing_accepted("s1", "t1", 4.2).as_response()


@dataclass
class Answers:
    answer: dict[str, Any]
    turns: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, turn: dict[str, Any]) -> dict[str, Any]:
        self.turns.append(turn)
        return self.answer


def test_an_answer_given_in_the_request_is_200_with_the_answer() -> None:
    answers = Answers(ANSWERED)
    response = things().post(TURN, None, None, answer=answers, retry_safe=unkeyed)
    assert response.status_code == 200 and response.body == ThingAnswer(thing="done")
    assert answers.turns == [{**TURN, "respondAsync": False}]
    assert "Location" not in response.headers


def test_an_accepted_turn_is_202_with_its_location_under_the_called_base_path_and_when_to_look() -> None:
    response = things(Resolver("/agents")).post(TURN, None, None, answer=Answers(PENDING), retry_safe=unkeyed)
    assert response.status_code == 202
    assert response.headers == {
        "Content-Type": "application/json",
        "Location": "/agents/things/s1/t1",
        "Retry-After": "5",
    }
    assert isinstance(response.body, ThingPending) and response.body.thing_url == "/agents/things/s1/t1"


def test_a_client_that_prefers_to_be_answered_later_is_told_its_preference_was_applied() -> None:
    answers = Answers(PENDING)
    response = things().post(TURN, "respond-async, wait=10", None, answer=answers, retry_safe=unkeyed)
    assert response.status_code == 202 and response.headers["Preference-Applied"] == "respond-async"
    assert answers.turns == [{**TURN, "respondAsync": True}]


def test_a_turn_answered_now_though_later_was_preferred_does_not_say_the_preference_was_applied() -> None:
    response = things().post(TURN, "respond-async", None, answer=Answers(ANSWERED), retry_safe=unkeyed)
    assert response.status_code == 200 and "Preference-Applied" not in response.headers


def test_with_an_idempotency_key_the_turn_goes_through_the_retry_safe_call_with_the_invocations_context() -> None:
    resolver = Resolver()
    once = RetrySafe(PENDING)
    answers = Answers(ANSWERED)
    response = things(resolver).post(TURN, "respond-async", "k-1", answer=answers, retry_safe=lambda: once)
    assert response.status_code == 202 and answers.turns == []
    assert once.payloads == [{**TURN, "respondAsync": True, "idempotencyKey": "k-1"}]
    assert once.contexts == [resolver.lambda_context]


def test_a_turn_read_while_the_worker_writes_it_is_202_looked_at_again_in_two_seconds() -> None:
    response = things().read(thing_accepted("s1", "t1", 117.0))
    assert response.status_code == 202
    assert response.headers == {"Content-Type": "application/json", "Location": "/v1/things/s1/t1", "Retry-After": "2"}
    assert isinstance(response.body, ThingPending) and response.body.expected_seconds == 117


@dataclass(frozen=True)
class SaysItsBody:
    """A domain answer that gives its body itself (as the chat's result does)."""

    def as_response(self) -> dict[str, Any]:
        return dict(ANSWERED)


@pytest.mark.parametrize("found", [ANSWERED, SaysItsBody()], ids=["a body", "an answer that says its body"])
def test_a_turn_read_once_answered_is_200_with_the_answer_the_post_would_have_given(found: Any) -> None:
    response = things().read(found)
    assert response.status_code == 200 and response.body == ThingAnswer(thing="done")


class Gone(DomainError):
    status = 404
    code = "GONE"


@dataclass
class Reads:
    """The domain's read of a kept 202's turn, recording that it was made."""

    found: object = None
    error: Exception | None = None
    made: int = 0

    def __call__(self) -> object:
        self.made += 1
        if self.error is not None:
            raise self.error
        return self.found


def test_a_kept_answer_that_is_no_202_holds_without_reading_anything() -> None:
    reads = Reads()
    assert accepted_turn_ended(ANSWERED, reads) is False and reads.made == 0


def test_a_kept_202_whose_turn_now_reads_as_an_error_no_longer_holds() -> None:
    """The worker gave the turn up (the interview's 503), or the turn or its session is gone."""
    assert accepted_turn_ended(PENDING, Reads(error=Gone("no such turn"))) is True


def test_a_kept_202_whose_turn_ended_unanswered_no_longer_holds_and_one_still_running_or_answered_does() -> None:
    """The chat's fallback answer: the turn ended, with no answer a retry should be sent to."""
    assert accepted_turn_ended(PENDING, Reads(found="fallback"), unanswered=lambda found: found == "fallback") is True
    assert accepted_turn_ended(PENDING, Reads(found="answer"), unanswered=lambda found: found == "fallback") is False
    assert accepted_turn_ended(PENDING, Reads(found=thing_accepted("s1", "t1", 1.0))) is False


def test_a_read_that_fails_for_another_reason_is_not_taken_for_a_turn_that_ended() -> None:
    with pytest.raises(ConnectionError):
        accepted_turn_ended(PENDING, Reads(error=ConnectionError("storage down")))
