"""The applicant's own actions (notice and consent, skip, correction, withdrawal) go through the
same reducer as the agents' changes, so the invariants (docs/interview.md#invariants) hold whatever the order of what
the applicant and the agents do."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lambda_agents.interview.catalog.notice import Retention, notice_for
from lambda_agents.interview.errors import (
    ConsentRequired,
    FieldActionRefused,
    FieldNotFound,
    InterviewFinished,
    NoticeChanged,
    SessionNotFound,
)
from lambda_agents.interview.interview_log import RecordingLog
from lambda_agents.interview.rules.application_events import ApplicationEventDelivery
from lambda_agents.interview.rules.current_field import advance_field
from lambda_agents.interview.rules.models import AgentName, AuditRecord, FieldStatus, InterviewState, SessionStatus
from lambda_agents.interview.rules.state_changes import (
    AddFacts,
    AddUserMessage,
    FinishInterview,
    InvariantViolation,
    RecordConsent,
    RecordReview,
    ReopenField,
    SetAskedField,
    SetAudit,
    SetFieldStatus,
    SetPlan,
    SkipField,
    StateChange,
    apply_change,
    apply_changes,
)
from lambda_agents.interview.service import InterviewService

from tests.support.branches import Branches, interleavings

from .support import (
    JOB,
    PurposeScript,
    consented_state,
    harness,
    interviewing,
    reviewed_then_audited,
)

PLANNED = apply_changes(consented_state(), [SetPlan(tuple(JOB.field_ids))], JOB)
FAILED_AUDIT = AuditRecord.model_validate(
    {
        "passed": False,
        "summary": "asked about family",
        "violations": [{"type": "x", "message": "m", "severity": "error"}],
    }
)


def under_interview(state: InterviewState) -> InterviewState:
    return apply_changes(state, advance_field(state), JOB)


def passed(state: InterviewState) -> InterviewState:
    """The current field answered and passed by the Reviewer, the next one under interview."""
    field_id = state.current_field_id
    assert field_id is not None
    state = apply_changes(
        state,
        [
            AddFacts(field_id, (("fact", "value"),)),
            SetFieldStatus(field_id, FieldStatus.REVIEWING),
            RecordReview(field_id, True, "", ()),
        ],
        JOB,
    )
    return under_interview(state)


def completed() -> InterviewState:
    state = under_interview(PLANNED)
    for _ in JOB.fields:
        state = passed(state)
    return apply_changes(
        state, [SetAudit(AuditRecord(passed=True, summary="ok")), FinishInterview(SessionStatus.COMPLETED)], JOB
    )


# -- consent -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [AddUserMessage("こんにちは"), SetPlan(tuple(JOB.field_ids)), SkipField("hobby"), ReopenField("hobby")],
    ids=lambda change: change.type,
)
def test_given_no_consent_then_no_change_applies_not_even_the_applicants_message(change: StateChange) -> None:
    with pytest.raises(InvariantViolation, match="not consented"):
        apply_change(InterviewState.initial(JOB), change, JOB)


def test_consent_is_given_once() -> None:
    with pytest.raises(InvariantViolation, match="already consented"):
        apply_change(consented_state(), RecordConsent("other", "t"), JOB)


def test_the_notice_names_what_is_collected_who_reads_it_and_how_long_it_is_kept() -> None:
    notice = notice_for(JOB, Retention(interview_days=90, run_step_days=7))
    assert [(f.field_id, f.required) for f in notice.collected] == [
        ("experience", True),
        ("motivation", True),
        ("hobby", False),
    ]
    assert any("hiring team" in reader for reader in notice.readers)
    assert (notice.retention_days, notice.audit_record_retention_days) == (90, 7)
    assert "90日後" in notice.text["ja"] and "7日後" in notice.text["ja"] and "趣味（任意）" in notice.text["ja"]
    assert notice_for(JOB, Retention(90, 14)).notice_id != notice.notice_id  # another notice, another id


# -- skip ----------------------------------------------------------------------------------------


def test_skipping_the_optional_field_under_interview_drops_its_facts_and_frees_the_current_field() -> None:
    state = under_interview(PLANNED)
    state = passed(passed(state))
    assert state.current_field_id == "hobby"
    state = apply_changes(state, [AddFacts("hobby", (("趣味", "読書"),))], JOB)
    skipped = apply_change(state, SkipField("hobby"), JOB)
    assert skipped.fields["hobby"].status is FieldStatus.SKIPPED and skipped.fields["hobby"].facts == {}
    assert (skipped.current_field_id, skipped.asked_field_id) == (None, None)
    # every field settled: the Auditor may run and a passed audit completes the application
    done = apply_changes(
        skipped, [SetAudit(AuditRecord(passed=True, summary="ok")), FinishInterview(SessionStatus.COMPLETED)], JOB
    )
    assert done.status is SessionStatus.COMPLETED


@pytest.mark.parametrize(
    ("state", "field_id", "reason"),
    [
        (PLANNED, "experience", "required"),
        (passed(passed(passed(under_interview(PLANNED)))), "hobby", "done"),
        (completed(), "hobby", "already completed"),
    ],
    ids=["required", "done", "finished"],
)
def test_a_skip_the_invariants_forbid_is_refused(state: InterviewState, field_id: str, reason: str) -> None:
    with pytest.raises(InvariantViolation, match=reason):
        apply_change(state, SkipField(field_id), JOB)


def test_a_field_skipped_before_the_plan_is_planned_but_never_asked() -> None:
    state = apply_change(consented_state(), SkipField("hobby"), JOB)
    state = under_interview(apply_change(state, SetPlan(tuple(JOB.field_ids)), JOB))
    state = passed(passed(state))
    assert state.current_field_id is None and state.fields["hobby"].status is FieldStatus.SKIPPED


# -- reopen (correction) -------------------------------------------------------------------------


@pytest.mark.parametrize("ending", [SessionStatus.COMPLETED, SessionStatus.AUDIT_FAILED])
def test_reopening_a_field_of_a_finished_interview_puts_it_back_in_progress_with_no_audit(
    ending: SessionStatus,
) -> None:
    state = completed()
    if ending is SessionStatus.AUDIT_FAILED:
        state = apply_changes(
            passed(passed(passed(under_interview(PLANNED)))),
            [SetAudit(FAILED_AUDIT), FinishInterview(SessionStatus.AUDIT_FAILED)],
            JOB,
        )
    reopened = apply_change(state, ReopenField("motivation"), JOB)
    progress = reopened.fields["motivation"]
    assert (progress.status, progress.facts) == (FieldStatus.INTERVIEWING, {})
    assert (reopened.status, reopened.audit, reopened.current_agent) == (
        SessionStatus.IN_PROGRESS,
        None,
        AgentName.INTERVIEWER,
    )
    # the correction is the answer under review: only a Reviewer pass settles it again
    assert reopened.current_field_id == reopened.asked_field_id == "motivation"
    with pytest.raises(InvariantViolation):
        apply_change(reopened, SetAudit(AuditRecord(passed=True, summary="ok")), JOB)
    with pytest.raises(InvariantViolation):
        apply_change(reopened, FinishInterview(SessionStatus.COMPLETED), JOB)


def test_only_a_done_or_skipped_field_can_be_reopened() -> None:
    state = under_interview(PLANNED)
    with pytest.raises(InvariantViolation, match="not done or skipped"):
        apply_change(state, ReopenField("experience"), JOB)


def test_a_field_skipped_before_the_plan_and_reopened_is_simply_pending_again() -> None:
    state = apply_changes(consented_state(), [SkipField("hobby"), ReopenField("hobby")], JOB)
    assert state.fields["hobby"].status is FieldStatus.PENDING and state.current_field_id is None


# -- property: any interleaving of the applicant's actions and the agents' steps ----------------

ACTIONS = st.lists(
    st.one_of(
        st.tuples(st.just("skip"), st.sampled_from(JOB.field_ids)),
        st.tuples(st.just("reopen"), st.sampled_from(JOB.field_ids)),
        st.tuples(st.just("review"), st.booleans()),
        st.tuples(st.just("audit"), st.booleans()),
    ),
    max_size=25,
)
# A passed review of every field, then a passed audit: the actions that complete the interview.
TO_COMPLETION: list[tuple[str, object]] = [*(("review", True) for _ in JOB.field_ids), ("audit", True)]


@st.composite
def action_sequences(draw: st.DrawFn) -> list[tuple[str, object]]:
    """Any actions; half of the time woven in between the ones that complete the interview, since actions drawn
    at random rarely audit it, let alone complete it."""
    actions = draw(ACTIONS)
    return draw(interleavings(TO_COMPLETION, actions)) if draw(st.booleans()) else actions


def _agent_changes(state: InterviewState, action: str, flag: bool) -> list[StateChange]:
    """What a well-behaved Interviewer would do next (the reducer still has the last word)."""
    changes = advance_field(state)
    state = apply_changes(state, changes, JOB)
    field_id = state.current_field_id
    if action == "review" and field_id is not None:
        review: list[StateChange] = [
            SetFieldStatus(field_id, FieldStatus.REVIEWING),
            RecordReview(field_id, flag, "", ()),
            SetAskedField(None),
        ]
        return [*changes, *review, *advance_field(apply_changes(state, review, JOB))]  # as the Interviewer does
    if action == "audit":
        record = AuditRecord(passed=True, summary="ok") if flag else FAILED_AUDIT
        ending = SessionStatus.COMPLETED if flag else SessionStatus.AUDIT_FAILED
        return [*changes, SetAudit(record), FinishInterview(ending)]
    return changes


def test_property_any_order_of_skips_corrections_reviews_and_audits_keeps_the_invariants() -> None:
    reached = Branches()

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(action_sequences())
    def example(actions: list[tuple[str, object]]) -> None:
        state = PLANNED
        for action, argument in actions:
            if action == "skip":
                changes: list[StateChange] = [SkipField(str(argument))]
            elif action == "reopen":
                changes = [ReopenField(str(argument))]
            else:
                changes = _agent_changes(state, action, bool(argument))
            with contextlib.suppress(InvariantViolation):  # a refused action leaves the state as it was
                state = apply_changes(state, changes, JOB)
            settled = [state.fields[f].status.settled for f in JOB.field_ids]
            assert all(not f.required or state.fields[f.field_id].status is not FieldStatus.SKIPPED for f in JOB.fields)
            assert state.current_field_id is None or not state.fields[state.current_field_id].status.settled
            assert state.asked_field_id is None or state.asked_field_id == state.current_field_id
            assert all(not p.facts for p in state.fields.values() if p.status is FieldStatus.SKIPPED)
            if any(p.status is FieldStatus.SKIPPED for p in state.fields.values()):
                reached.add("skipped")
            if state.audit is not None:
                reached.add("audited")
                assert all(settled)  # an audit exists only over a settled interview; a correction drops it
            if state.finished:
                reached.add("finished")
                assert state.audit is not None and all(settled) and state.current_agent is None
            if state.status is SessionStatus.COMPLETED:
                reached.add("completed")
                assert state.audit is not None and state.audit.passed
                assert all(state.fields[f.field_id].status is FieldStatus.DONE for f in JOB.fields if f.required)

    example()
    reached.assert_all("skipped", "audited", "finished", "completed")


# -- through the service -------------------------------------------------------------------------


class RecordingPublisher:
    def __init__(self) -> None:
        self.published: list[str] = []

    def publish(self, events: object) -> list[str]:
        ids = [event.event_id for event in events]  # type: ignore[attr-defined]
        self.published += ids
        return ids


class ListOutbox:
    def __init__(self, repository: object) -> None:
        self.repository = repository

    def pending(self, written_before: object, limit: int) -> list[object]:
        return list(self.repository.outbox)  # type: ignore[attr-defined]

    def delivered(self, events: object) -> None:
        gone = {event.event_id for event in events}  # type: ignore[attr-defined]
        self.repository.outbox = [e for e in self.repository.outbox if e.event_id not in gone]  # type: ignore[attr-defined]


def plain_service(h: object, publisher: RecordingPublisher | None = None) -> InterviewService:
    """The service as deployed: sessions start without consent; events published after commits."""
    events = None
    if publisher is not None:
        events = ApplicationEventDelivery(publisher, ListOutbox(h.repository), RecordingLog())  # type: ignore[attr-defined]
    return InterviewService(h.repository, h.orchestrator, events=events)  # type: ignore[attr-defined]


def test_before_consent_a_message_is_refused_without_a_model_call_and_consent_names_the_notice_shown() -> None:
    model = PurposeScript()
    h = harness(model)
    service = plain_service(h)
    session = service.create("applicant-1", JOB)
    with pytest.raises(ConsentRequired):
        service.post_message("applicant-1", session.session_id, "こんにちは")
    with pytest.raises(NoticeChanged):
        service.consent("applicant-1", session.session_id, "an-older-notice")
    notice_id = service.notice(session).notice_id
    consented = service.consent("applicant-1", session.session_id, notice_id)
    assert consented.state.consent is not None and consented.version == 1
    again = service.consent("applicant-1", session.session_id, notice_id)  # a retried consent changes nothing
    assert again.version == 1
    assert model.requests == []


def test_skip_names_why_it_is_refused() -> None:
    h = harness(PurposeScript())
    session_id = interviewing(h, done=("experience",))
    with pytest.raises(FieldNotFound):
        h.service.skip("applicant-1", session_id, "salary")
    with pytest.raises(FieldActionRefused) as required:
        h.service.skip("applicant-1", session_id, "motivation")
    assert required.value.code == "FIELD_REQUIRED"
    skipped = h.service.skip("applicant-1", session_id, "hobby")
    assert skipped.state.fields["hobby"].status is FieldStatus.SKIPPED
    with pytest.raises(FieldActionRefused) as settled:
        h.service.skip("applicant-1", session_id, "hobby")
    assert settled.value.code == "FIELD_SETTLED"
    with pytest.raises(SessionNotFound):
        h.service.skip("someone-else", session_id, "hobby")


def _finish(h: object, service: InterviewService) -> str:
    session_id = interviewing(h, asked=True, done=("experience", "motivation"))  # type: ignore[arg-type]
    h.model.add(**reviewed_then_audited(趣味="読書"))  # type: ignore[attr-defined]
    result = service.post_message("applicant-1", session_id, "読書です")
    assert result.session.state.status is SessionStatus.COMPLETED
    return session_id


def test_a_correction_is_reviewed_in_its_turn_audited_again_and_announced_as_a_new_completion() -> None:
    model = PurposeScript()
    h = harness(model)
    publisher = RecordingPublisher()
    service = plain_service(h, publisher)
    session_id = _finish(h, service)
    with pytest.raises(InterviewFinished):
        service.post_message("applicant-1", session_id, "まだ話したい")

    model.add(**reviewed_then_audited(reason="自家焙煎に興味があるから"))
    result = service.correct("applicant-1", session_id, "motivation", "自家焙煎に興味があるからです")

    state = result.session.state
    assert state.status is SessionStatus.COMPLETED and state.fields["motivation"].facts == {
        "reason": "自家焙煎に興味があるから"
    }
    assert result.messages[0].data == {"correctionOf": "motivation"}
    review_prompt = model.of("reviewer")[-1].messages[-1]["content"]
    assert "Applicant: 自家焙煎に興味があるからです" in review_prompt
    assert len(publisher.published) == 2 and len(set(publisher.published)) == 2  # two completions, two event ids
    assert h.repository.outbox == []  # both published, nothing left to relay
    model.assert_consumed()


def test_only_a_settled_field_can_be_corrected() -> None:
    h = harness(PurposeScript())
    session_id = interviewing(h)
    with pytest.raises(FieldActionRefused) as refused:
        h.service.correct("applicant-1", session_id, "experience", "5年です")
    assert refused.value.code == "FIELD_NOT_FINISHED"


def test_withdrawal_deletes_the_session_and_announces_it_once() -> None:
    h = harness(PurposeScript())
    publisher = RecordingPublisher()
    service = plain_service(h, publisher)
    session_id = _finish(h, service)
    with pytest.raises(SessionNotFound):
        service.withdraw("someone-else", session_id)

    service.withdraw("applicant-1", session_id)

    assert h.repository.load(session_id) is None
    assert [event.split(":")[::2] for event in publisher.published] == [
        [session_id, "completed"],
        [session_id, "withdrawn"],
    ]
    with pytest.raises(SessionNotFound):
        service.withdraw("applicant-1", session_id)


def test_an_application_never_consented_to_is_withdrawn_without_an_announcement() -> None:
    h = harness(PurposeScript())
    publisher = RecordingPublisher()
    service = plain_service(h, publisher)
    session = service.create("applicant-1", JOB)
    service.withdraw("applicant-1", session.session_id)
    assert h.repository.load(session.session_id) is None and publisher.published == []
