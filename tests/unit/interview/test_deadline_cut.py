"""A turn is cut to what fits the request's time (API Gateway ends a request at 29 s): once a tool
has succeeded, the deadline ends the loop with a graceful reply like the iteration limit and the
turn is stored once, as the last completed tool left it; a tool the deadline stopped half-way is
undone. Before anything succeeded, the deadline is an error and nothing is written."""

from __future__ import annotations

import pytest
from lambda_agents.interview.agents.turn_context import TurnContext
from lambda_agents.interview.locales.languages import system_text
from lambda_agents.interview.rules.models import FieldStatus
from lambda_agents.interview.rules.state_changes import AddFacts, AddUserMessage, SetFieldStatus
from lambda_agents.llm import ChatRequest, Deadline, DeadlineReached, Usage

from .support import JOB, PurposeScript, ask, harness, interviewing, reviewer, structured

Q = "これまでのバリスタのご経験を教えてください。"
FOLLOW_UP = {"passed": False, "feedback": "年数が不明", "missing_facts": ["years"]}


class ManualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def passes_the_deadline_on(purpose: str, clock: ManualClock, deadline: Deadline, call: int = 1):  # type: ignore[no-untyped-def]
    """A model hook: the ``call``-th request of ``purpose`` takes until the deadline has passed."""
    seen: list[str] = []

    def hook(request: ChatRequest) -> None:
        seen.append(request.purpose)
        if request.purpose == f"interview.{purpose}" and seen.count(request.purpose) == call:
            clock.now = deadline.expires_at + 1.0

    return hook


def test_given_a_succeeded_tool_when_the_deadline_passes_then_the_turn_ends_gracefully_and_is_stored_once() -> None:
    clock = ManualClock()
    deadline = Deadline(20.0, clock)
    model = PurposeScript(interviewer=[reviewer(workplace="カフェ森")], reviewer=[structured(FOLLOW_UP)])
    model.hook = passes_the_deadline_on("reviewer", clock, deadline)
    h = harness(model)
    session_id = interviewing(h, asked=True)

    result = h.service.post_message("applicant-1", session_id, "カフェ森です", deadline)

    assert (result.outcome.reply, result.outcome.reply_kind) == (system_text("time_limit", "ja"), "retry")
    assert result.outcome.awaiting_user_response is True
    assert len(model.of("interviewer")) == 1  # no call was started that could not finish
    assert h.repository.commits == 1
    stored = h.repository.load(session_id)
    assert stored is not None and [m.content for m in stored.messages][1:] == ["カフェ森です", result.outcome.reply]
    assert stored.session.state.fields["experience"].missing_facts == ["years"]  # the review is kept
    assert result.outcome.usage.total_tokens == 120 + 95  # the interviewer's call and the Reviewer's
    assert ("warn", "deadline reached") in [(level, message) for level, message, _ in h.log.records]
    model.assert_consumed()


def test_given_the_deadline_stops_the_reviewer_half_way_before_anything_succeeded_then_nothing_is_written() -> None:
    clock = ManualClock()
    deadline = Deadline(20.0, clock)
    # The applicant answers an open question; the Reviewer tool records the facts, then its
    # sub-agent finds no time left.
    model = PurposeScript(interviewer=[reviewer(years="5", workplace="Cafe Mori")])
    model.hook = passes_the_deadline_on("interviewer", clock, deadline)
    h = harness(model)
    session_id = interviewing(h, asked=True)
    before = h.repository.load(session_id)

    with pytest.raises(DeadlineReached):
        h.service.post_message("applicant-1", session_id, "カフェ森で5年働きました", deadline)

    assert h.repository.load(session_id) == before and h.repository.commits == 0
    assert [step.output["status"] for step in h.run_steps.steps if step.output] == ["error"]  # recorded as aborted
    model.assert_consumed()


def test_a_checkpoint_restores_what_a_tool_applied_after_it_and_keeps_the_tokens_spent() -> None:
    h = harness(PurposeScript())
    stored = h.repository.load(interviewing(h, asked=True))
    assert stored is not None
    ctx = TurnContext("s", "t", JOB, stored.session.state, [], [], answer_needs_review=True)
    ctx.apply(AddUserMessage("カフェ森で5年働きました"))
    checkpoint = ctx.checkpoint()

    ctx.apply(AddFacts("experience", (("years", "5"),)), SetFieldStatus("experience", FieldStatus.REVIEWING))
    ctx.answer_needs_review = False
    ctx.baked["fieldsCompleted"] = ["experience"]
    ctx.usage = ctx.usage + Usage(80, 15)
    ctx.restore(checkpoint)

    assert ctx.state == checkpoint.state and len(ctx.changes) == 1
    assert ctx.state.fields["experience"].status is not FieldStatus.REVIEWING
    assert (ctx.answer_needs_review, ctx.baked) == (True, {})
    assert ctx.usage.total_tokens == 95


def test_given_the_deadline_passes_before_any_tool_succeeded_then_nothing_is_written() -> None:
    clock = ManualClock()
    deadline = Deadline(20.0, clock)
    model = PurposeScript(interviewer=[ask(Q)])
    model.hook = passes_the_deadline_on("interviewer", clock, deadline)
    h = harness(model)
    session_id = interviewing(h)
    before = h.repository.load(session_id)

    with pytest.raises(DeadlineReached):
        h.service.post_message("applicant-1", session_id, "よろしくお願いします", deadline)

    assert h.repository.load(session_id) == before
    assert h.repository.commits == 0
