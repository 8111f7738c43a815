"""Field states and invariants (docs/interview.md#fields, docs/interview.md#invariants), enforced by the
reducer every StateChange goes through."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lambda_agents.interview.rules.models import AuditRecord, AuditViolation, FieldStatus, InterviewState, SessionStatus
from lambda_agents.interview.rules.state_changes import (
    AddFacts,
    AddUserMessage,
    FinishInterview,
    InvariantViolation,
    RecordReview,
    SetAudit,
    SetCurrentField,
    SetFieldStatus,
    SetPlan,
    StateChange,
    apply_change,
    apply_changes,
    describe,
)

from tests.support.branches import Branches, interleavings

from .support import JOB, consented_state

PLAN = SetPlan(("experience", "motivation", "hobby"))
PASSED = AuditRecord(passed=True, summary="ok")
FAILED = AuditRecord(
    passed=False, summary="asked about family", violations=[AuditViolation(type="x", message="m", severity="error")]
)


def planned() -> InterviewState:
    return apply_changes(consented_state(), [PLAN], JOB)


def review(field_id: str, passed: bool = True) -> list[StateChange]:
    return [SetFieldStatus(field_id, FieldStatus.REVIEWING), RecordReview(field_id, passed, "", ())]


def changes_to_all_done() -> list[StateChange]:
    """What takes a planned interview through a passed review of every field, in the plan's order."""
    changes: list[StateChange] = []
    for field_id in ("experience", "motivation", "hobby"):
        changes += [SetCurrentField(field_id), SetFieldStatus(field_id, FieldStatus.INTERVIEWING), *review(field_id)]
    return [*changes, SetCurrentField(None)]


def all_done() -> InterviewState:
    return apply_changes(planned(), changes_to_all_done(), JOB)


def test_given_a_field_when_it_goes_through_review_then_it_moves_pending_interviewing_reviewing_done() -> None:
    state = apply_changes(
        planned(), [SetCurrentField("experience"), SetFieldStatus("experience", FieldStatus.INTERVIEWING)], JOB
    )
    seen = [state.fields["experience"].status]
    for change in review("experience"):
        state = apply_change(state, change, JOB)
        seen.append(state.fields["experience"].status)
    assert seen == [FieldStatus.INTERVIEWING, FieldStatus.REVIEWING, FieldStatus.DONE]


def test_given_feedback_when_the_review_does_not_pass_then_the_field_goes_back_to_interviewing() -> None:
    state = apply_changes(
        planned(), [SetCurrentField("experience"), SetFieldStatus("experience", FieldStatus.INTERVIEWING)], JOB
    )
    state = apply_changes(state, [SetFieldStatus("experience", FieldStatus.REVIEWING)], JOB)
    state = apply_change(state, RecordReview("experience", False, "how many years?", ("years",)), JOB)
    progress = state.fields["experience"]
    assert (progress.status, progress.missing_facts, progress.feedback) == (
        FieldStatus.INTERVIEWING,
        ["years"],
        "how many years?",
    )


@pytest.mark.parametrize(
    ("start", "target"),
    [
        (FieldStatus.PENDING, FieldStatus.REVIEWING),
        (FieldStatus.PENDING, FieldStatus.DONE),
        (FieldStatus.INTERVIEWING, FieldStatus.DONE),
        (FieldStatus.INTERVIEWING, FieldStatus.PENDING),
    ],
)
def test_given_any_other_move_then_it_is_refused(start: FieldStatus, target: FieldStatus) -> None:
    state = planned()
    state.fields["experience"].status = start
    with pytest.raises(InvariantViolation, match="cannot move"):
        apply_change(state, SetFieldStatus("experience", target), JOB)


def test_only_a_reviewer_pass_marks_a_field_done() -> None:
    state = apply_changes(
        planned(), [SetCurrentField("experience"), SetFieldStatus("experience", FieldStatus.INTERVIEWING)], JOB
    )
    with pytest.raises(InvariantViolation, match="only a Reviewer pass"):
        apply_change(state, SetFieldStatus("experience", FieldStatus.DONE), JOB)
    with pytest.raises(InvariantViolation, match="not under review"):
        apply_change(state, RecordReview("experience", True, "", ()), JOB)


def test_a_field_advances_only_after_the_current_one_is_done() -> None:
    state = apply_changes(
        planned(), [SetCurrentField("experience"), SetFieldStatus("experience", FieldStatus.INTERVIEWING)], JOB
    )
    with pytest.raises(InvariantViolation, match="a field advances only after review"):
        apply_change(state, SetCurrentField("motivation"), JOB)


def test_the_auditor_runs_only_after_every_field_is_done() -> None:
    with pytest.raises(InvariantViolation, match="after every field is done"):
        apply_change(planned(), SetAudit(PASSED), JOB)
    assert apply_change(all_done(), SetAudit(PASSED), JOB).audit == PASSED


def test_the_application_completes_only_when_required_fields_are_done_and_the_audit_passed() -> None:
    with pytest.raises(InvariantViolation, match="required fields not done: experience, motivation"):
        apply_change(planned(), FinishInterview(SessionStatus.COMPLETED), JOB)
    with pytest.raises(InvariantViolation, match="after a passed audit"):
        apply_change(all_done(), FinishInterview(SessionStatus.COMPLETED), JOB)
    failed = apply_change(all_done(), SetAudit(FAILED), JOB)
    with pytest.raises(InvariantViolation, match="after a passed audit"):
        apply_change(failed, FinishInterview(SessionStatus.COMPLETED), JOB)
    done = apply_changes(all_done(), [SetAudit(PASSED), FinishInterview(SessionStatus.COMPLETED)], JOB)
    assert (done.status, done.current_agent) == (SessionStatus.COMPLETED, None)


def test_a_failed_audit_ends_the_interview_as_audit_failed_never_completed() -> None:
    ended = apply_changes(all_done(), [SetAudit(FAILED), FinishInterview(SessionStatus.AUDIT_FAILED)], JOB)
    assert ended.status is SessionStatus.AUDIT_FAILED
    with pytest.raises(InvariantViolation, match="needs a failed audit"):
        apply_changes(all_done(), [SetAudit(PASSED), FinishInterview(SessionStatus.AUDIT_FAILED)], JOB)


def test_a_finished_interview_takes_no_state_change_but_its_last_messages() -> None:
    ended = apply_changes(all_done(), [SetAudit(PASSED), FinishInterview(SessionStatus.COMPLETED)], JOB)
    assert apply_change(ended, AddUserMessage("thanks"), JOB) == ended
    with pytest.raises(InvariantViolation, match="already completed"):
        apply_change(ended, AddFacts("hobby", (("x", "y"),)), JOB)


def test_the_plan_is_set_once_and_lists_every_field() -> None:
    with pytest.raises(InvariantViolation, match="every field of the job exactly once"):
        apply_change(consented_state(), SetPlan(("experience",)), JOB)
    with pytest.raises(InvariantViolation, match="already set"):
        apply_change(planned(), PLAN, JOB)


def test_the_reducer_never_modifies_the_state_it_is_given() -> None:
    state = planned()
    before = state.model_dump()
    apply_change(state, SetCurrentField("experience"), JOB)
    assert state.model_dump() == before


def test_a_change_is_described_as_type_and_payload() -> None:
    assert describe(AddUserMessage("hi")) == {"type": "ADD_USER_MESSAGE", "payload": {"content": "hi"}}


FIELDS = st.sampled_from(["experience", "motivation", "hobby", "unknown"])
CHANGES = st.one_of(
    st.builds(SetCurrentField, st.one_of(st.none(), FIELDS)),
    st.builds(SetFieldStatus, FIELDS, st.sampled_from(list(FieldStatus))),
    st.builds(RecordReview, FIELDS, st.booleans(), st.just(""), st.just(())),
    st.builds(SetAudit, st.sampled_from([PASSED, FAILED])),
    st.builds(FinishInterview, st.sampled_from(list(SessionStatus))),
)
TO_COMPLETION: list[StateChange] = [*changes_to_all_done(), SetAudit(PASSED), FinishInterview(SessionStatus.COMPLETED)]


@st.composite
def change_sequences(draw: st.DrawFn) -> list[StateChange]:
    """Any changes; half of the time woven in between the steps that complete the interview, since changes drawn
    at random almost never get a field through its review, let alone the interview to its end."""
    changes: list[StateChange] = draw(st.lists(CHANGES, max_size=25))
    return draw(interleavings(TO_COMPLETION, changes)) if draw(st.booleans()) else changes


def test_property_any_sequence_of_accepted_changes_keeps_the_invariants() -> None:
    reached = Branches()

    @settings(max_examples=400, deadline=None)
    @given(change_sequences())
    def example(changes: list[StateChange]) -> None:
        state = planned()
        reviewed_passed: set[str] = set()
        for change in changes:
            try:
                state = apply_change(state, change, JOB)
            except InvariantViolation:
                continue
            if isinstance(change, RecordReview) and change.passed:
                reviewed_passed.add(change.field_id)
        for field_id, progress in state.fields.items():
            if progress.status is FieldStatus.DONE:
                reached.add("field done")
                assert field_id in reviewed_passed  # done only through a Reviewer pass
        if state.status is SessionStatus.COMPLETED:
            reached.add("completed")
            assert state.audit is not None and state.audit.passed
            assert all(state.fields[f.field_id].status is FieldStatus.DONE for f in JOB.fields if f.required)
        if state.audit is not None:
            reached.add("audited")
            assert all(progress.status is FieldStatus.DONE for progress in state.fields.values())

    example()
    reached.assert_all("field done", "completed", "audited")
