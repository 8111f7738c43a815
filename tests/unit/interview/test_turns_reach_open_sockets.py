"""Every interview turn reaches the applicant's open WebSocket connections while it runs, from the
request or the worker (docs/api.md#websocket): a ``progress`` frame before and after each hidden
step (the agents' calls, QuickCheck, Reviewer, Auditor), sent before that step's call starts; the
question's words as a ``delta`` only once its QuickCheck passed (a question that failed it reaches
no frame); then one ``done`` (the reply as the turn's REST read answers it). A reply the system
writes (the iteration limit, the end of the interview) comes as ``done`` alone, never as deltas;
a turn the worker gives up on reaches them as the ``error`` its read answers."""

from __future__ import annotations

from collections.abc import Sequence

from lambda_agents.answered_later import TurnAccepted
from lambda_agents.interview.locales.languages import system_text
from lambda_agents.interview.turn_runner import TurnResult
from lambda_agents.interview.views import turn_answer
from lambda_agents.live import DeltaFrame, DoneFrame, ErrorFrame, Frame, ProgressFrame, encoded
from lambda_agents.llm import Deadline
from lambda_agents.llm.errors import ProviderUnavailable

from tests.support.recording_channel import RecordingChannel

from .support import (
    FAIL_CHECK,
    PASS_CHECK,
    PurposeScript,
    ask,
    harness,
    interviewing,
    reviewed_then_asked,
    reviewed_then_audited,
    structured,
    text,
)
from .test_turns_answered_later import GREETING, REASONING, greeting_model, with_handover

Q = "この仕事を志望された理由を教えてください。"
PROHIBITED = "ご家族のお仕事を教えてください。"
Shown = tuple[str, ...]


def ran(agent: str, step: str) -> list[tuple[str, str, str]]:
    """A hidden step's two progress frames, as ``shown`` reads them: started, then done."""
    return [(agent, step, "started"), (agent, step, "done")]


def shown(frames: Sequence[Frame]) -> list[Shown]:
    """What each frame tells the applicant, in order."""
    seen: list[Shown] = []
    for frame in frames:
        if isinstance(frame, ProgressFrame):
            seen.append((frame.agent, frame.step, frame.state))
        elif isinstance(frame, DeltaFrame):
            seen.append(("delta", frame.text))
        else:
            seen.append((frame.type,))
    return seen


def test_each_hidden_step_is_shown_before_its_call_starts_then_the_checked_question_then_done() -> None:
    model = PurposeScript(**reviewed_then_asked(Q, years="5年", workplace="カフェ森"))
    h = harness(model)
    h.service.live = channel = RecordingChannel()
    session_id = interviewing(h, asked=True)
    last_frame_at_call: list[tuple[str, Shown | None]] = []
    model.hook = lambda request: last_frame_at_call.append(
        (request.purpose.removeprefix("interview."), (shown(channel.of("applicant-1")) or [None])[-1])
    )

    result = h.service.post_message("applicant-1", session_id, "カフェ森で5年働きました。")

    assert shown(channel.of("applicant-1")) == [
        *ran("interviewer", "thinking"),
        *ran("reviewer", "reviewing_answer"),
        *ran("interviewer", "thinking"),
        *ran("quick_check", "checking_question"),
        ("delta", Q),
        ("done",),
    ]
    assert last_frame_at_call == [
        ("interviewer", ("interviewer", "thinking", "started")),
        ("reviewer", ("reviewer", "reviewing_answer", "started")),
        ("interviewer", ("interviewer", "thinking", "started")),
        ("quick_check", ("quick_check", "checking_question", "started")),
    ]
    frames = channel.of("applicant-1")
    deltas = [frame for frame in frames if isinstance(frame, DeltaFrame)]
    stored = h.stored(session_id).messages[-1]
    assert "".join(delta.text for delta in deltas) == stored.content == result.outcome.reply
    assert {(frame.sessionId, frame.seq) for frame in frames if not isinstance(frame, ErrorFrame)} == {
        (session_id, stored.data["turnId"])
    }
    assert len(model.of("interviewer")) == 2  # the question written once, in ask


def test_a_question_that_fails_its_quickcheck_reaches_no_frame() -> None:
    model = PurposeScript(
        interviewer=[ask(PROHIBITED), ask(Q)], quick_check=[structured(FAIL_CHECK), structured(PASS_CHECK)]
    )
    h = harness(model)
    h.service.live = channel = RecordingChannel()
    session_id = interviewing(h, done=("experience",))

    h.service.post_message("applicant-1", session_id, "よろしくお願いします")

    frames = channel.of("applicant-1")
    assert all("ご家族" not in encoded(frame).decode() for frame in frames)
    assert [frame.text for frame in frames if isinstance(frame, DeltaFrame)] == [Q]
    checks = [s for s in shown(frames) if s[0] == "quick_check"]
    assert checks == [("quick_check", "checking_question", "started"), ("quick_check", "checking_question", "done")] * 2


def test_a_reply_the_system_writes_comes_as_done_alone_never_as_deltas() -> None:
    model = PurposeScript(interviewer=[text("…")] * 10)
    h = harness(model)
    h.service.live = channel = RecordingChannel()
    h.service.render_answer = turn_answer

    h.service.post_message("applicant-1", interviewing(h), "よろしくお願いします")

    frames = channel.of("applicant-1")
    assert not any(isinstance(frame, DeltaFrame) for frame in frames)
    done = frames[-1]
    assert isinstance(done, DoneFrame)
    assert (done.model_dump()["reply"], done.model_dump()["replyKind"]) == (system_text("loop_limit", "ja"), "retry")
    assert shown(frames).count(("interviewer", "thinking", "started")) == 10


def test_the_audit_is_shown_as_it_runs_and_the_interviews_end_comes_as_done() -> None:
    model = PurposeScript(**reviewed_then_audited(趣味="読書"))
    h = harness(model)
    h.service.live = channel = RecordingChannel()

    h.service.post_message("applicant-1", interviewing(h, asked=True, done=("experience", "motivation")), "読書です。")

    seen = shown(channel.of("applicant-1"))
    assert seen[-3:] == [("auditor", "auditing", "started"), ("auditor", "auditing", "done"), ("done",)]
    assert not any(step[0] == "delta" for step in seen)


def test_a_turn_answered_in_the_request_reaches_the_applicants_sockets_once_committed() -> None:
    h, _, session = with_handover(greeting_model())
    h.service.live = channel = RecordingChannel()
    result = h.service.post_message("applicant-1", session, "こんにちは", Deadline.after(26.0))
    assert isinstance(result, TurnResult)
    assert shown(channel.of("applicant-1")) == [
        *ran("greeter", "thinking"),
        *ran("quick_check", "checking_question"),
        ("delta", GREETING),
        ("done",),
    ]
    frame = channel.of("applicant-1")[-1]
    assert isinstance(frame, DoneFrame) and frame.sessionId == session
    assert frame.model_dump()["reply"] == GREETING and frame.model_dump()["version"] == result.session.version


def test_a_turn_handed_over_pushes_its_frames_from_the_worker_keyed_by_the_turn_its_202_named() -> None:
    h, queue, session = with_handover(greeting_model(), REASONING)
    h.service.live = channel = RecordingChannel()
    accepted = h.service.post_message("applicant-1", session, "こんにちは", Deadline.after(26.0))
    assert isinstance(accepted, TurnAccepted) and channel.sent == []
    turn_id = accepted.ids["turnId"]
    h.service.run_pending(queue.sent[-1], Deadline.after(290.0))
    frames = channel.of("applicant-1")
    assert {(frame.sessionId, frame.seq) for frame in frames if isinstance(frame, ProgressFrame | DeltaFrame)} == {
        (session, turn_id)
    }
    frame = frames[-1]
    assert isinstance(frame, DoneFrame) and frame.seq == turn_id
    assert frame.model_dump()["reply"] == h.service.turn_outcome("applicant-1", session, turn_id)["reply"]


def test_a_turn_the_worker_gives_up_on_reaches_the_sockets_as_the_error_its_read_answers() -> None:
    h, queue, session = with_handover(PurposeScript(greeter=[ProviderUnavailable("500")] * 2))
    h.service.live = channel = RecordingChannel()
    accepted = h.service.post_message("applicant-1", session, "こんにちは", prefer_later=True)
    assert isinstance(accepted, TurnAccepted)
    h.service.give_up(queue.sent[-1], ProviderUnavailable("500"))
    (frame,) = channel.of("applicant-1")
    assert isinstance(frame, ErrorFrame) and frame.error.code == "MODEL_UNAVAILABLE"
    assert (frame.sessionId, frame.seq) == (session, accepted.ids["turnId"])
