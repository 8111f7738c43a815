"""An interview turn that does not fit in its request is run after it, and only then
(docs/interview.md#turns-answered-later).

A turn makes several model calls; with a slow or reasoning model it outlasts API Gateway's 29 s.
A turn expected to (by this container's turn times, or the model's pace before any), one the
client prefers to read later, and one the deadline cuts anyway are handed to the worker: nothing of
the turn is committed in the request, the session is marked (a second turn meanwhile is refused),
and the worker commits the turn with its reply for the client, exactly once. In-memory ports and a
model scripted per purpose.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from lambda_agents.answered_later import TurnAccepted
from lambda_agents.interview.errors import TurnFailed, TurnInProgress, TurnNotFound
from lambda_agents.interview.pending_turns import TurnMessage
from lambda_agents.interview.rules.models import AgentName
from lambda_agents.interview.turn_runner import TurnResult
from lambda_agents.llm import Deadline
from lambda_agents.llm.errors import ProviderUnavailable
from lambda_agents.llm.speeds import SpeedEstimate

from tests.support.logs import captured_logs
from tests.support.recording_queue import RecordingQueue

from .support import (
    JOB,
    PASS_CHECK,
    Harness,
    PurposeScript,
    ask,
    handed_over_by,
    harness,
    interviewing,
    reviewed_then_asked,
    run_pending,
    structured,
)

GREETING = "こんにちは！ご応募ありがとうございます。使用言語とお住まいの国を教えてください。"
TYPICAL = SpeedEstimate(first_token_s=1.0, tokens_per_s=60.0)  # a turn of four calls: ~21 s
REASONING = SpeedEstimate(first_token_s=25.0, tokens_per_s=60.0)  # a turn of four calls: ~117 s


def with_handover(
    model: PurposeScript, pace: SpeedEstimate = TYPICAL, *, broken: bool = False
) -> tuple[Harness, RecordingQueue[TurnMessage], str]:
    h = harness(model)
    queue = RecordingQueue[TurnMessage](broken=broken)
    handed_over_by(h, queue, pace)
    session = h.service.create("applicant-1", JOB)
    return h, queue, session.session_id


def greeting_model() -> PurposeScript:
    return PurposeScript(greeter=[ask(GREETING)], quick_check=[structured(PASS_CHECK)])


def test_given_a_turn_that_fits_then_it_runs_in_the_request_and_its_time_is_learned() -> None:
    h, queue, session = with_handover(greeting_model())
    result = h.service.post_message("applicant-1", session, "こんにちは", Deadline.after(26.0))
    assert isinstance(result, TurnResult) and result.outcome.reply == GREETING and queue.sent == []
    assert h.service.handover is not None and h.service.handover.times.expected_s(TYPICAL) < 1.0


def test_given_a_model_whose_turns_outlast_the_request_then_the_turn_is_handed_over_before_any_call() -> None:
    model = greeting_model()
    h, queue, session = with_handover(model, REASONING)
    accepted = h.service.post_message("applicant-1", session, "こんにちは", Deadline.after(26.0))
    assert isinstance(accepted, TurnAccepted) and model.requests == []
    (message,) = queue.sent
    assert (message.session_id, message.turn_id) == (session, accepted.ids["turnId"])
    stored = h.repository.load(session)
    assert stored is not None and stored.messages == [] and stored.session.version == 0  # nothing committed
    assert stored.pending is not None and stored.pending.text == "こんにちは"
    assert accepted.as_response()["turnUrl"] == f"/interviews/{session}/turns/{accepted.ids['turnId']}"


def test_while_a_turn_is_pending_the_next_message_is_refused_and_nothing_is_run() -> None:
    model = greeting_model()
    h, _, session = with_handover(model)
    h.service.post_message("applicant-1", session, "こんにちは", prefer_later=True)
    with pytest.raises(TurnInProgress):
        h.service.post_message("applicant-1", session, "もしもし", Deadline.after(26.0))
    assert model.requests == []


def test_the_worker_runs_the_pending_turn_once_and_its_reply_is_read_where_the_202_said() -> None:
    model = greeting_model()
    h, _, session = with_handover(model)
    accepted = h.service.post_message("applicant-1", session, "こんにちは", prefer_later=True)
    assert isinstance(accepted, TurnAccepted)
    pending = h.service.turn_outcome("applicant-1", session, accepted.ids["turnId"])
    assert isinstance(pending, TurnAccepted)

    result = run_pending(h, "applicant-1", session, accepted.ids["turnId"], Deadline.after(290.0))
    assert result is not None and result.outcome.agent is AgentName.GREETER
    assert run_pending(h, "applicant-1", session, accepted.ids["turnId"], Deadline.after(290.0)) is None  # redelivered
    reply = h.service.turn_outcome("applicant-1", session, accepted.ids["turnId"])
    assert isinstance(reply, dict) and reply["reply"] == GREETING and reply["replyKind"] == "question"
    stored = h.repository.load(session)
    assert stored is not None and stored.pending is None and [m.role for m in stored.messages] == ["user", "assistant"]
    model.assert_consumed()


def test_a_turn_the_deadline_cuts_in_the_request_is_not_committed_but_handed_over() -> None:
    model = PurposeScript(greeter=[ask(GREETING)])  # the QuickCheck never comes in time: the deadline passes

    def late(request: object) -> None:
        if getattr(request, "purpose", "") == "interview.quick_check":
            raise_deadline()

    model.hook = late
    h, queue, session = with_handover(model)
    accepted = h.service.post_message("applicant-1", session, "こんにちは", Deadline.after(26.0))
    assert isinstance(accepted, TurnAccepted) and len(queue.sent) == 1
    stored = h.repository.load(session)
    assert stored is not None and stored.messages == [] and stored.pending is not None


def raise_deadline() -> None:
    from lambda_agents.llm import DeadlineReached, Usage

    raise DeadlineReached("the request's time ran out", [], Usage())


def test_a_queue_that_refuses_the_turn_lifts_the_mark_and_says_to_send_again() -> None:
    h, _, session = with_handover(greeting_model(), broken=True)
    with pytest.raises(TurnFailed):
        h.service.post_message("applicant-1", session, "こんにちは", prefer_later=True)
    stored = h.repository.load(session)
    assert stored is not None and stored.pending is None and stored.messages == []


def test_a_worker_that_gives_up_records_the_failure_and_the_session_takes_messages_again() -> None:
    model = PurposeScript(greeter=[ProviderUnavailable("500")] * 2)
    h, queue, session = with_handover(model)
    accepted = h.service.post_message("applicant-1", session, "こんにちは", prefer_later=True)
    assert isinstance(accepted, TurnAccepted)
    h.service.give_up(queue.sent[-1], ProviderUnavailable("down"))
    with pytest.raises(TurnFailed):
        h.service.turn_outcome("applicant-1", session, accepted.ids["turnId"])
    stored = h.repository.load(session)
    assert stored is not None and stored.pending is None


def test_an_unknown_turn_and_another_users_interview_are_not_found() -> None:
    from lambda_agents.interview.errors import SessionNotFound

    h, _, session = with_handover(greeting_model())
    with pytest.raises(TurnNotFound):
        h.service.turn_outcome("applicant-1", session, "1795555555555-0123abcd")
    with pytest.raises(SessionNotFound):
        h.service.turn_outcome("someone-else", session, "1795555555555-0123abcd")


def test_while_a_turn_is_pending_a_skip_is_refused_as_turn_in_progress_like_a_correction() -> None:
    h, _, session = with_handover(greeting_model())
    h.service.post_message("applicant-1", session, "こんにちは", prefer_later=True)
    with pytest.raises(TurnInProgress):
        h.service.skip("applicant-1", session, "hobby")  # an optional field not answered yet: skippable after
    stored = h.repository.load(session)
    assert stored is not None and stored.session.version == 0 and stored.pending is not None


def test_an_interview_withdrawn_while_the_worker_runs_its_turn_ends_the_turn_with_nothing_stored() -> None:
    """Withdrawal is the applicant's right at any moment: the worker's commit is refused, and that is
    the turn's normal end (None: settled), not a failure to run it again."""
    model = greeting_model()
    h, _, session = with_handover(model)
    accepted = h.service.post_message("applicant-1", session, "こんにちは", prefer_later=True)
    assert isinstance(accepted, TurnAccepted)

    def withdrawn_meanwhile(request: object) -> None:
        if getattr(request, "purpose", "") == "interview.quick_check":
            h.service.withdraw("applicant-1", session)

    model.hook = withdrawn_meanwhile
    assert run_pending(h, "applicant-1", session, accepted.ids["turnId"], Deadline.after(290.0)) is None
    assert h.repository.load(session) is None and h.repository.turns == {}
    model.assert_consumed()


def test_a_worker_commit_refused_while_the_turn_is_still_pending_fails_to_be_delivered_again() -> None:
    from lambda_agents.interview.errors import VersionConflict

    model = greeting_model()
    h, _, session = with_handover(model)
    accepted = h.service.post_message("applicant-1", session, "こんにちは", prefer_later=True)
    assert isinstance(accepted, TurnAccepted)

    def changed_meanwhile(request: object) -> None:  # no product path does this: a version moved under the mark
        stored = h.repository.stored[session]
        h.repository.stored[session] = replace(stored, session=stored.session.model_copy(update={"version": 7}))

    model.hook = changed_meanwhile
    with pytest.raises(VersionConflict):
        run_pending(h, "applicant-1", session, accepted.ids["turnId"], Deadline.after(290.0))
    stored = h.repository.load(session)
    assert stored is not None and stored.pending is not None and stored.pending.turn_id == accepted.ids["turnId"]


def test_a_turn_cut_after_a_tool_call_is_run_by_the_worker_to_its_commit_with_each_run_step_once() -> None:
    """The request's greeter calls ``ask`` at once; its QuickCheck comes too late, so the turn is
    handed over after a RunStep was recorded (outside the turn's transaction). The worker runs the
    same turn id again: it must finish, its steps numbered after the request's, with no model call
    beyond the turn's own."""
    model = PurposeScript(greeter=[ask(GREETING), ask(GREETING)], quick_check=[structured(PASS_CHECK)])
    cut_in_the_request = [True]

    def late(request: object) -> None:
        if getattr(request, "purpose", "") == "interview.quick_check" and cut_in_the_request.pop(0):
            raise_deadline()

    model.hook = late
    cut_in_the_request.append(False)
    h, queue, session = with_handover(model)
    accepted = h.service.post_message("applicant-1", session, "こんにちは", Deadline.after(26.0))
    assert isinstance(accepted, TurnAccepted) and [s.seq for s in h.run_steps.steps] == [1]

    (message,) = queue.sent
    result = h.service.run_pending(message, Deadline.after(290.0))

    assert result is not None and result.outcome.reply == GREETING
    reply = h.service.turn_outcome("applicant-1", session, accepted.ids["turnId"])
    assert isinstance(reply, dict) and reply["reply"] == GREETING
    steps = [(s.turn_id, s.seq, s.tool_name, (s.output or {}).get("status")) for s in h.run_steps.steps]
    assert steps == [(accepted.ids["turnId"], 1, "ask", "error"), (accepted.ids["turnId"], 2, "ask", "success")]
    assert h.run_steps.events == [("started", 1), ("finished", 1), ("started", 2), ("finished", 2)]
    assert [r.purpose for r in model.requests] == ["interview.greeter", "interview.quick_check"] * 2
    model.assert_consumed()


def test_a_correction_handed_over_is_run_by_the_worker_as_the_correction_it_was() -> None:
    """A correction the client prefers to read later: the worker reopens the field and the turn is
    reviewed as the request would have, committed once, its reply read at the turn's location."""
    question = "志望動機を教えてください。"
    model = PurposeScript(**reviewed_then_asked(question, years="6年", workplace="カフェ森"))
    h = harness(model)
    queue = RecordingQueue[TurnMessage]()
    handed_over_by(h, queue, TYPICAL)
    session = interviewing(h, done=("experience",))

    accepted = h.service.correct("applicant-1", session, "experience", "6年です。カフェ森です。", prefer_later=True)
    assert isinstance(accepted, TurnAccepted) and model.requests == []
    (message,) = queue.sent
    result = h.service.run_pending(message, Deadline.after(290.0))

    assert result is not None and result.messages[0].data == {"correctionOf": "experience"}
    assert result.session.state.fields["experience"].facts == {"years": "6年", "workplace": "カフェ森"}
    reply = h.service.turn_outcome("applicant-1", session, accepted.ids["turnId"])
    assert isinstance(reply, dict) and reply["reply"] == question
    assert h.service.run_pending(message, Deadline.after(290.0)) is None
    model.assert_consumed()


@pytest.mark.parametrize("forged", ["another user", "another turn id", "no such interview"])
def test_a_worker_message_naming_no_turn_pending_in_the_users_interview_runs_nothing(forged: str) -> None:
    """The queue message is input too: the worker runs only the turn the session's own mark holds."""
    model = greeting_model()
    h, queue, session = with_handover(model)
    assert isinstance(h.service.post_message("applicant-1", session, "こんにちは", prefer_later=True), TurnAccepted)
    (sent,) = queue.sent
    user, session_id, turn_id = sent.user_id, sent.session_id, sent.turn_id
    if forged == "another user":
        user = "applicant-2"
    elif forged == "another turn id":
        turn_id = "1795555555555-0123abcd"
    else:
        session_id = "0" * 32

    assert run_pending(h, user, session_id, turn_id, Deadline.after(290.0)) is None
    stored = h.repository.load(session)
    assert model.requests == [] and h.run_steps.steps == []
    assert stored is not None and stored.messages == [] and stored.pending is not None


def test_each_normal_end_of_a_workers_turn_is_logged_at_info_with_its_reason() -> None:
    """As the chat's worker does: a message naming no turn to run, and a turn whose interview was
    withdrawn while it ran, each say why the worker settled it without a commit."""
    model = greeting_model()
    h, queue, session = with_handover(model)
    assert isinstance(h.service.post_message("applicant-1", session, "こんにちは", prefer_later=True), TurnAccepted)
    (sent,) = queue.sent

    def withdrawn_meanwhile(request: object) -> None:
        if getattr(request, "purpose", "") == "interview.quick_check":
            h.service.withdraw("applicant-1", session)

    model.hook = withdrawn_meanwhile
    with captured_logs() as logs:
        assert run_pending(h, "applicant-2", session, sent.turn_id, Deadline.after(290.0)) is None
        assert run_pending(h, "applicant-1", session, "1795555555555-0123abcd", Deadline.after(290.0)) is None
        assert run_pending(h, "applicant-1", session, sent.turn_id, Deadline.after(290.0)) is None

    lines = [json.loads(line) for line in logs.getvalue().splitlines() if line.startswith("{")]
    ends = [
        (line["level"], line["turnId"], line["reason"])
        for line in lines
        if line["message"] == "interview turn needs no run"
    ]
    assert ends == [
        ("INFO", sent.turn_id, "no such interview of this user (withdrawn meanwhile)"),
        ("INFO", "1795555555555-0123abcd", "no such turn pending (committed already, or another turn)"),
        ("INFO", sent.turn_id, "withdrawn or committed by another delivery while it ran"),
    ]


def test_a_turn_cut_in_the_request_counts_the_requests_calls_in_the_interviews_usage_total() -> None:
    """The request's greeter call was paid for before the hand-off: the committed usageTotal holds
    it beside the worker's calls, as the provider billed them all."""
    model = PurposeScript(greeter=[ask(GREETING), ask(GREETING)], quick_check=[structured(PASS_CHECK)])
    cut_in_the_request = [True, False]

    def late(request: object) -> None:
        if getattr(request, "purpose", "") == "interview.quick_check" and cut_in_the_request.pop(0):
            raise_deadline()

    model.hook = late
    h, queue, session = with_handover(model)
    h.service.post_message("applicant-1", session, "こんにちは", Deadline.after(26.0))
    (message,) = queue.sent
    assert message.spent_before is not None and message.spent_before["attempts"] >= 1
    result = h.service.run_pending(message, Deadline.after(290.0))
    assert result is not None
    worker_tokens = result.outcome.usage.total_tokens
    request_tokens = message.spent_before["promptTokens"] + message.spent_before["completionTokens"]
    assert request_tokens > 0
    assert result.session.usage_total["totalTokens"] == worker_tokens + request_tokens


def test_a_turn_whose_first_call_cannot_fit_at_the_learned_pace_is_handed_over_before_it_starts() -> None:
    """The container timed a quick turn minutes ago; the model has since slowed (its learned pace: 25 s
    before the first token). The quick turn time alone said the turn fits, so the request started
    it, its first call could not be planned in the time left, and it was handed over 0.2 s later
    with no call made, told to look again in 1 s. A turn takes at least its first call: the turn is
    handed over before anything of it runs, with the time the pace says."""
    slowed = replace(REASONING, learned=True)
    model = greeting_model()
    model.speed_prior = slowed  # type: ignore[attr-defined]  # what the engine plans each call with
    h, queue, session = with_handover(model, slowed)
    assert h.service.handover is not None
    h.service.handover.times.record(2.0)  # a quick turn, before the model slowed

    accepted = h.service.post_message("applicant-1", session, "こんにちは", Deadline.after(26.0))

    assert isinstance(accepted, TurnAccepted) and len(queue.sent) == 1 and model.requests == []
    assert "workflow started" not in h.log.messages()  # nothing of the turn ran in the request
    assert accepted.expected_s >= REASONING.first_token_s
