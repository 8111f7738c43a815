"""The invariants (docs/interview.md#invariants), enforced in code: QuickCheck before every question
(run by ask itself, on its exact text), the Reviewer before the next field, the Auditor after the last
field, completion only when every required field is done and the audit passed. A refusal goes back
to the model, never to the applicant."""

from __future__ import annotations

import json

from lambda_agents.interview.locales.languages import system_text
from lambda_agents.interview.rules.models import FieldStatus, SessionStatus

from .support import (
    FAIL_CHECK,
    PASS_AUDIT,
    PASS_CHECK,
    PASS_REVIEW,
    Harness,
    PurposeScript,
    ask,
    auditor,
    call,
    checked_ask,
    harness,
    interviewing,
    reviewer,
    structured,
    text,
    tool,
    tools,
)

Q = "これまでのバリスタのご経験を教えてください。"
Q_NEXT = "この仕事を志望された理由を教えてください。"
PROHIBITED = "ご家族のお仕事を教えてください。"


def last_tool_result(model: PurposeScript, purpose: str, index: int) -> dict[str, object]:
    request = model.of(purpose)[index]
    result: dict[str, object] = json.loads(request.messages[-1]["content"])
    return result


def stored_texts(h: Harness, session_id: str) -> list[str]:
    return [message.content for message in h.stored(session_id).messages]


def test_every_ask_runs_quickcheck_on_its_exact_question_and_a_failed_one_goes_back_to_the_model() -> None:
    model = PurposeScript(
        interviewer=[ask(PROHIBITED), ask(Q)], quick_check=[structured(FAIL_CHECK), structured(PASS_CHECK)]
    )
    h = harness(model)
    session_id = interviewing(h)

    result = h.service.post_message("applicant-1", session_id, "よろしくお願いします")

    checked = [
        request.messages[-1]["content"].split("## Question to check\n")[1] for request in model.of("quick_check")
    ]
    assert checked == [PROHIBITED, Q]  # each ask's own text, checked before it counted as asked
    rejection = last_tool_result(model, "interviewer", 1)
    assert rejection["status"] == "error"
    assert "QuickCheck failed: prohibited_topic: asks about age. Nothing was sent" in str(rejection["result"])
    assert result.outcome.reply == Q
    assert PROHIBITED not in json.dumps(stored_texts(h, session_id), ensure_ascii=False)
    failed_step = h.run_steps.steps[0]
    assert failed_step.output is not None and failed_step.output["result"]["quick_check_output"] == FAIL_CHECK


def test_quickcheck_is_no_subtask_the_model_can_call_or_skip() -> None:
    model = PurposeScript(
        interviewer=[tool("subtask", {"agent": "quick_check", "facts": None}), ask(Q)],
        quick_check=[structured(PASS_CHECK)],
    )
    h = harness(model)
    result = h.service.post_message("applicant-1", interviewing(h), "よろしくお願いします")
    refused = last_tool_result(model, "interviewer", 1)
    assert refused["status"] == "error" and "Invalid parameters for subtask" in str(refused["result"])
    assert len(model.of("quick_check")) == 1 and result.outcome.reply == Q


def test_given_a_quickcheck_that_cannot_answer_then_nothing_is_sent_and_the_model_asks_again() -> None:
    model = PurposeScript(
        interviewer=[ask(Q), ask(Q)], quick_check=[text("not json"), text("still not json"), structured(PASS_CHECK)]
    )
    h = harness(model)
    result = h.service.post_message("applicant-1", interviewing(h), "よろしくお願いします")
    assert "QuickCheck could not run" in str(last_tool_result(model, "interviewer", 1)["result"])
    assert result.outcome.reply == Q
    model.assert_consumed()


def test_a_question_passed_in_an_earlier_turn_is_checked_again_when_asked_again() -> None:
    failed_review = {"passed": False, "feedback": "何年か不明", "missing_facts": ["years"]}
    duplicate = {"passed": False, "violations": [{"type": "duplicate_question", "message": "asked already"}]}
    model = PurposeScript(**checked_ask(Q))
    h = harness(model)
    session_id = interviewing(h)
    h.service.post_message("applicant-1", session_id, "よろしくお願いします")

    model.add(
        interviewer=[reviewer(workplace="カフェ森"), ask(Q)] + [text("…")] * 8,
        reviewer=[structured(failed_review)],
        quick_check=[structured(duplicate)],
    )
    result = h.service.post_message("applicant-1", session_id, "カフェ森で働いていました")

    assert last_tool_result(model, "interviewer", 2)["status"] == "success"  # the review
    assert last_tool_result(model, "interviewer", 3)["status"] == "error"  # its QuickCheck ran again, and failed
    assert len(model.of("quick_check")) == 2
    assert result.outcome.reply_kind == "retry"


def test_given_a_model_that_skips_the_reviewer_then_the_field_does_not_advance() -> None:
    model = PurposeScript(
        interviewer=[
            ask(Q_NEXT),
            reviewer(years="5年", workplace="カフェ森"),
            ask(Q_NEXT),
        ],
        reviewer=[structured(PASS_REVIEW)],
        quick_check=[structured(PASS_CHECK)],
    )
    h = harness(model)
    session_id = interviewing(h, asked=True)

    result = h.service.post_message("applicant-1", session_id, "5年間、カフェ森で働きました。")

    refused = last_tool_result(model, "interviewer", 1)
    assert refused["status"] == "error"
    assert "review" in str(refused["result"])
    assert len(model.of("quick_check")) == 1  # the refused ask's QuickCheck never ran
    state = result.session.state
    assert state.fields["experience"].status is FieldStatus.DONE
    assert state.fields["experience"].facts == {"years": "5年", "workplace": "カフェ森"}
    assert (state.current_field_id, state.fields["motivation"].status) == ("motivation", FieldStatus.INTERVIEWING)
    assert result.outcome.reply == Q_NEXT


def test_given_reviewer_feedback_then_the_field_goes_back_to_interviewing_and_a_follow_up_is_checked() -> None:
    follow_up = "何年ほどお勤めでしたか？"
    model = PurposeScript(
        interviewer=[reviewer(workplace="カフェ森"), ask(follow_up)],
        reviewer=[structured({"passed": False, "feedback": "年数が不明", "missing_facts": ["years"]})],
        quick_check=[structured(PASS_CHECK)],
    )
    h = harness(model)
    result = h.service.post_message("applicant-1", interviewing(h, asked=True), "カフェ森で働いていました。")

    progress = result.session.state.fields["experience"]
    assert (progress.status, progress.missing_facts, progress.feedback) == (
        FieldStatus.INTERVIEWING,
        ["years"],
        "年数が不明",
    )
    assert "Missing facts: years" in str(last_tool_result(model, "interviewer", 1)["result"])
    assert result.session.state.current_field_id == "experience"
    assert result.outcome.reply == follow_up


def test_the_reviewer_runs_only_on_a_new_answer_once() -> None:
    model = PurposeScript(interviewer=[reviewer(years="5"), ask(Q)], quick_check=[structured(PASS_CHECK)])
    h = harness(model)
    h.service.post_message("applicant-1", interviewing(h), "こんにちは")
    assert "no new applicant answer to review" in str(last_tool_result(model, "interviewer", 1)["result"])
    assert model.of("reviewer") == []


def test_given_a_model_that_stops_without_the_auditor_then_it_is_told_to_run_it_and_completion_follows() -> None:
    model = PurposeScript(
        interviewer=[
            reviewer(趣味="読書"),
            text("ありがとうございました！以上で終了です。"),
            ask("ほかに何か？"),
            auditor(),
        ],
        reviewer=[structured(PASS_REVIEW)],
        auditor=[structured(PASS_AUDIT)],
    )
    h = harness(model)
    session_id = interviewing(h, asked=True, done=("experience", "motivation"))

    result = h.service.post_message("applicant-1", session_id, "読書です。")

    injected = model.of("interviewer")[2].messages[-1]
    assert injected == {
        "role": "system",
        "content": "You still need to:\n- Run the final audit with subtask(agent='auditor')",
    }
    assert "every field is done" in str(last_tool_result(model, "interviewer", 3)["result"])
    assert (result.outcome.reply, result.outcome.reply_kind) == (system_text("completed", "ja"), "completed")
    assert result.outcome.awaiting_user_response is False
    state = result.session.state
    assert (state.status, state.current_agent, state.audit and state.audit.summary) == (
        SessionStatus.COMPLETED,
        None,
        PASS_AUDIT["summary"],
    )
    assert "ありがとうございました！以上で終了です。" not in stored_texts(h, session_id)


def test_the_auditor_is_refused_before_the_last_field_is_done() -> None:
    model = PurposeScript(interviewer=[auditor(), ask(Q)], quick_check=[structured(PASS_CHECK)])
    h = harness(model)
    result = h.service.post_message("applicant-1", interviewing(h), "こんにちは")
    assert "auditor refused: field experience is not done yet" in str(
        last_tool_result(model, "interviewer", 1)["result"]
    )
    assert model.of("auditor") == [] and result.session.state.audit is None


def test_given_a_failed_audit_then_the_application_is_not_completed() -> None:
    failed = {
        "passed": False,
        "violations": [{"type": "prohibited_topic", "message": "asked about family", "severity": "error"}],
        "summary": "要確認",
    }
    model = PurposeScript(
        interviewer=[reviewer(趣味="読書"), auditor()], reviewer=[structured(PASS_REVIEW)], auditor=[structured(failed)]
    )
    h = harness(model)
    result = h.service.post_message(
        "applicant-1", interviewing(h, asked=True, done=("experience", "motivation")), "読書"
    )
    state = result.session.state
    assert state.status is SessionStatus.AUDIT_FAILED
    assert state.audit is not None and state.audit.violations[0].message == "asked about family"
    assert (result.outcome.reply, result.outcome.awaiting_user_response) == (system_text("audit_failed", "ja"), False)


def test_given_two_auditor_calls_in_one_answer_then_the_second_is_refused_without_a_second_audit() -> None:
    # Found by the loop property test: a failed audit ends the interview, and the second call in
    # the same answer crashed the turn with the reducer's InvariantViolation.
    failed = {"passed": False, "violations": None, "summary": "要確認"}
    audit_call = {"agent": "auditor", "facts": None}
    model = PurposeScript(
        interviewer=[reviewer(趣味="読書"), tools(call("subtask", audit_call), call("subtask", audit_call))],
        reviewer=[structured(PASS_REVIEW)],
        auditor=[structured(failed)],
    )
    h = harness(model)
    session_id = interviewing(h, asked=True, done=("experience", "motivation"))

    result = h.service.post_message("applicant-1", session_id, "読書です。")

    assert result.session.state.status is SessionStatus.AUDIT_FAILED
    assert len(model.of("auditor")) == 1  # no sub-agent call was paid for the refused one
    assert len(model.of("interviewer")) == 2  # the interview is over: no further loop iteration
    assert result.outcome.reply_kind == "audit_failed"
