"""StateChange and the API layer (docs/interview.md#state-changes): the orchestrator returns the
changes, the API layer persists them; one turn is one versioned write (optimistic locking); usage is
summed per turn."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from lambda_agents.interview.agents.architect import ArchitectAgent
from lambda_agents.interview.agents.greeter import GreeterAgent
from lambda_agents.interview.agents.interviewer import InterviewerAgent
from lambda_agents.interview.agents.orchestrator import OrchestratorInput, interview_prompt_version
from lambda_agents.interview.employer_views import application_detail
from lambda_agents.interview.errors import InterviewFinished, SessionNotFound, TurnLimitReached, VersionConflict
from lambda_agents.interview.rules.state_changes import apply_changes
from lambda_agents.interview.views import APPLICANT_DATA_KEYS
from lambda_agents.llm import Usage
from lambda_agents.llm.prices import PRICES

from .support import (
    JOB,
    PASS_CHECK,
    PASS_REVIEW,
    ConsentedOnCreate,
    PurposeScript,
    ask,
    checked_ask,
    harness,
    interviewing,
    reviewed_then_asked,
    reviewed_then_audited,
    reviewer,
    structured,
    text,
)

Q = "これまでのバリスタのご経験を教えてください。"
SELF_CONTRADICTING = {"passed": True, "violations": [{"type": "tone_violation", "message": "curt"}]}


def test_the_stored_state_is_the_loaded_state_with_the_orchestrators_changes_applied() -> None:
    model = PurposeScript(**checked_ask(Q))
    h = harness(model)
    session_id = interviewing(h)
    before = h.stored(session_id)

    result = h.service.post_message("applicant-1", session_id, "よろしくお願いします")

    after = h.stored(session_id)
    assert after.session.state == apply_changes(before.session.state, result.outcome.changes, JOB)
    assert after.session.state == result.outcome.state
    assert (after.session.version, after.session.message_count) == (before.session.version + 1, 2)
    assert [(m.seq, m.role, m.content) for m in after.messages] == [
        (0, "user", "よろしくお願いします"),
        (1, "assistant", Q),
    ]


def test_the_assistant_message_carries_the_turns_additional_data_not_intermediate_results() -> None:
    model = PurposeScript(**reviewed_then_asked(Q, years="5年", workplace="カフェ森"))
    h = harness(model)
    result = h.service.post_message("applicant-1", interviewing(h, asked=True), "カフェ森で5年です")
    data = result.messages[-1].data
    assert data["fieldsCompleted"] == ["experience"]
    assert data["fieldId"] == "motivation" and data["replyKind"] == "question"
    assert data["usage"]["totalTokens"] == result.outcome.usage.total_tokens
    assert "quick_check_output" not in str(data) and "reviewer_output" not in str(data)


def test_usage_is_summed_over_every_call_of_the_turn_sub_agents_and_failed_attempts_included() -> None:
    model = PurposeScript(
        interviewer=[ask(Q)],
        quick_check=[
            structured(SELF_CONTRADICTING, prompt=7, completion=3),
            structured(PASS_CHECK, prompt=11, completion=2),
        ],
    )
    h = harness(model)
    session_id = interviewing(h)
    result = h.service.post_message("applicant-1", session_id, "こんにちは")
    # one interviewer call (100 + 20) and two QuickCheck attempts, the first one self-contradicting
    assert "passed must be false when violations are listed" in model.of("quick_check")[1].messages[-1]["content"]
    assert result.outcome.usage == Usage(100 + 7 + 11, 20 + 3 + 2)
    stored = h.stored(session_id)
    assert stored.session.usage_total["totalTokens"] == result.outcome.usage.total_tokens
    model.assert_consumed()


def test_given_two_turns_from_the_same_version_then_the_second_write_is_refused_whole() -> None:
    model = PurposeScript(**checked_ask(Q))
    h = harness(model)
    session_id = interviewing(h)
    stale = h.stored(session_id)

    def run_other_turn_first(request: object) -> None:
        model.hook = None
        h.service.post_message("applicant-1", session_id, "もう一つのタブから")

    model.add(**checked_ask(Q))
    model.hook = run_other_turn_first
    with pytest.raises(VersionConflict):
        h.service.post_message("applicant-1", session_id, "最初のタブから")

    stored = h.stored(session_id)
    assert [m.content for m in stored.messages] == ["もう一つのタブから", Q]
    assert stored.session.version == stale.session.version + 1
    assert h.repository.commits == 1


def test_another_users_session_is_not_found() -> None:
    h = harness(PurposeScript())
    session_id = interviewing(h)
    with pytest.raises(SessionNotFound):
        h.service.post_message("someone-else", session_id, "hi")
    with pytest.raises(SessionNotFound):
        h.service.get("someone-else", session_id)


def test_a_finished_interview_takes_no_message_and_calls_no_model() -> None:
    model = PurposeScript(**reviewed_then_audited(趣味="読書"))
    h = harness(model)
    session_id = interviewing(h, asked=True, done=("experience", "motivation"))
    h.service.post_message("applicant-1", session_id, "読書です")
    calls = len(model.requests)
    with pytest.raises(InterviewFinished):
        h.service.post_message("applicant-1", session_id, "まだ話したい")
    assert len(model.requests) == calls


def test_a_session_takes_at_most_max_turns_messages() -> None:
    model = PurposeScript(interviewer=[text("…")] * 10)
    h = harness(model)
    h.service = ConsentedOnCreate(h.repository, h.orchestrator, max_turns=1)
    session_id = interviewing(h)
    h.service.post_message("applicant-1", session_id, "一通目")
    with pytest.raises(TurnLimitReached):
        h.service.post_message("applicant-1", session_id, "二通目")


def test_the_orchestrator_refuses_a_finished_state_itself() -> None:
    h = harness(PurposeScript())
    session = h.service.create("u", JOB)
    state = session.state.model_copy(update={"current_agent": None})
    with pytest.raises(InterviewFinished):
        h.orchestrator.process_message(OrchestratorInput("s", JOB, state, [], "hi", "t"))


def test_each_turn_stores_its_record_and_the_employer_view_sums_the_applications_tokens_and_cost() -> None:
    """Every stored interview turn carries its model, prompt version, tokens and cost (the
    assistant message's data.account), and the employer's view of the application sums them."""

    def priced(steps: dict[str, list[Any]]) -> dict[str, list[Any]]:
        return {purpose: [replace(step, model="gpt-4o-mini") for step in queue] for purpose, queue in steps.items()}

    model = PurposeScript(**priced(checked_ask(Q)))
    h = harness(model)
    session_id = interviewing(h)
    first = h.service.post_message("applicant-1", session_id, "こんにちは")
    model.add(
        **priced(
            {
                "interviewer": [reviewer(years="5年", workplace="カフェ森"), ask(Q)],
                "reviewer": [structured(PASS_REVIEW)],
                "quick_check": [structured(PASS_CHECK)],
            }
        )
    )
    second = h.service.post_message("applicant-1", session_id, "カフェ森で5年です")

    mini = PRICES["gpt-4o-mini"]
    # The first turn: one interviewer call (100 + 20 tokens) and its ask's QuickCheck (80 + 15);
    # the second: two interviewer calls, a review and a QuickCheck.
    expected = [(180, 35, 2), (360, 70, 4)]
    for turn, (prompt, completion, attempts) in zip((first, second), expected, strict=True):
        account = turn.messages[-1].data["account"]
        assert account["model"] == "gpt-4o-mini"
        assert account["promptVersion"] == h.orchestrator.prompt_version
        assert (account["promptTokens"], account["completionTokens"], account["attempts"]) == (
            prompt,
            completion,
            attempts,
        )
        assert account["costUsd"] == pytest.approx((prompt * mini.input + completion * mini.output) / 1_000_000)
    detail = application_detail(h.stored(session_id)).model_dump(by_alias=True)
    assert detail["usageTotal"]["totalTokens"] == 180 + 35 + 360 + 70
    costs = [turn.messages[-1].data["account"]["costUsd"] for turn in (first, second)]
    assert detail["usageTotal"]["costUsd"] == pytest.approx(sum(costs))
    assert "account" not in APPLICANT_DATA_KEYS  # the cost is the employer's, not in the applicant's view


def test_the_interview_prompt_version_is_stable_and_follows_the_agents_instructions() -> None:
    h = harness(PurposeScript())
    assert h.orchestrator.prompt_version == harness(PurposeScript()).orchestrator.prompt_version

    class Reworded(InterviewerAgent):
        def system_prompt(self, ctx: Any) -> str:
            return "You are the Interviewer. Be brief."

    assert interview_prompt_version([GreeterAgent(), ArchitectAgent(), Reworded()]) != h.orchestrator.prompt_version
