"""Sub-sessions (docs/interview.md#sub-sessions): Reviewer, QuickCheck and Auditor run as their own
model calls that start from the handoff summary (conversation so far, current field, facts
collected) and answer their output schemas; a self-contradicting verdict is invalid, a failed
sub-agent is an error result for the Interviewer."""

from __future__ import annotations

import json

import pytest
from lambda_agents.interview.agents.reviewers import (
    AuditResult,
    QuickCheckResult,
    ReviewResult,
    SubAgents,
    SubAgentSettings,
)
from lambda_agents.interview.rules.handoff import conversation_excerpt, handoff_summary
from lambda_agents.interview.rules.models import FieldStatus
from lambda_agents.interview.rules.state_changes import AddFacts, apply_change
from lambda_agents.llm import Strategy
from pydantic import ValidationError

from .support import (
    JOB,
    PASS_CHECK,
    PASS_REVIEW,
    PurposeScript,
    ask,
    consented_state,
    harness,
    interviewing,
    reviewer,
    structured,
    text,
    tool,
)

Q = "何年ほどお勤めでしたか？"


def test_the_excerpt_keeps_the_latest_messages_within_the_budget_and_says_what_was_left_out() -> None:
    transcript = [("user", f"message {n} " + "x" * 100) for n in range(50)]
    excerpt = conversation_excerpt(transcript, budget_tokens=200)
    lines = excerpt.splitlines()
    assert lines[0].endswith("earlier message(s) not shown)")
    assert lines[-1].startswith("Applicant: message 49")
    assert int(lines[0].strip("(").split()[0]) + len(lines) - 1 == 50


def test_the_handoff_summary_has_the_conversation_the_current_field_and_the_facts() -> None:
    state = apply_change(consented_state(), AddFacts("experience", (("workplace", "カフェ森"),)), JOB)
    summary = handoff_summary([("assistant", "ご経験は？"), ("user", "カフェ森です")], state, JOB, "experience")
    assert summary.split("\n\n")[0] == "## Conversation so far\nAssistant: ご経験は？\nApplicant: カフェ森です"
    assert "## Current field\n- field_id: experience\n- label: 経験" in summary
    assert "- required facts: years, workplace" in summary
    assert "- done criteria: Both the number of years and a workplace are known" in summary
    assert "## Facts collected\n- experience / workplace: カフェ森" in summary
    audit_summary = handoff_summary([], state, JOB, None)
    assert "## Fields" in audit_summary and "- field_id: hobby" in audit_summary


def test_a_sub_session_sends_the_handoff_and_its_schema_by_default_as_json_schema() -> None:
    model = PurposeScript(quick_check=[structured(PASS_CHECK)])
    SubAgents(model).quick_check("HANDOFF", "質問？", None)
    request = model.requests[0]
    assert request.parameters.json_output is not None
    assert request.parameters.json_output.name == "QuickCheckResult"
    assert request.parameters.json_output.schema["required"] == ["passed", "violations"]
    assert request.messages[-1]["content"] == "HANDOFF\n\n## Question to check\n質問？"
    assert request.temperature == 0.0


def test_the_forced_tool_strategy_is_available_for_providers_without_json_schema() -> None:
    model = PurposeScript(reviewer=[tool("StructuredOutput", PASS_REVIEW)])
    result = SubAgents(model, SubAgentSettings(strategy=Strategy.TOOL)).review("HANDOFF", None)
    assert result.value.passed is True
    assert model.requests[0].parameters.tool_choice == "StructuredOutput"


@pytest.mark.parametrize(
    ("model", "payload", "error"),
    [
        (
            QuickCheckResult,
            {"passed": True, "violations": [{"type": "tone_violation", "message": "m"}]},
            "passed must be false",
        ),
        (QuickCheckResult, {"passed": False, "violations": None}, "at least one violation"),
        (QuickCheckResult, {"passed": False, "violations": [{"type": "rude", "message": "m"}]}, "type"),
        (ReviewResult, {"passed": True, "feedback": None, "missing_facts": ["years"]}, "passed must be false"),
        (ReviewResult, {"passed": False, "feedback": " ", "missing_facts": None}, "feedback or missing_facts"),
        (
            AuditResult,
            {"passed": True, "violations": [{"type": "x", "message": "m", "severity": "error"}], "summary": "s"},
            "severity error",
        ),
        (AuditResult, {"passed": True, "violations": None, "summary": ""}, "summary"),
    ],
)
def test_a_self_contradicting_or_incomplete_verdict_is_invalid(
    model: type, payload: dict[str, object], error: str
) -> None:
    with pytest.raises(ValidationError, match=error):
        model.model_validate(payload)


def test_an_audit_may_pass_with_warnings() -> None:
    audit = AuditResult.model_validate(
        {"passed": True, "violations": [{"type": "tone", "message": "m", "severity": "warning"}], "summary": "s"}
    )
    assert audit.passed


def test_given_a_reviewer_that_refuses_then_the_interviewer_gets_an_error_and_the_field_is_interviewing_again() -> None:
    model = PurposeScript(
        interviewer=[reviewer(years="5"), reviewer(years="5年"), ask(Q)],
        reviewer=[
            text("", refusal="no"),
            structured({"passed": False, "feedback": None, "missing_facts": ["workplace"]}),
        ],
        quick_check=[structured(PASS_CHECK)],
    )
    h = harness(model)
    result = h.service.post_message("applicant-1", interviewing(h, asked=True), "5年です")

    first = json.loads(model.of("interviewer")[1].messages[-1]["content"])
    assert first == {
        "status": "error",
        "result": {"message": "The Reviewer could not run (refusal); call subtask(agent='reviewer') again."},
    }
    progress = result.session.state.fields["experience"]
    assert (progress.status, progress.missing_facts, progress.reviews) == (FieldStatus.INTERVIEWING, ["workplace"], 1)
    assert result.outcome.reply == Q


def test_given_a_provider_that_rejects_the_json_schema_then_the_sub_session_falls_through_to_the_forced_tool() -> None:
    from lambda_agents.llm.errors import RequestRejected

    model = PurposeScript(
        quick_check=[
            RequestRejected("400 response_format json_schema is not supported"),
            tool("StructuredOutput", PASS_CHECK),
        ]
    )
    result = SubAgents(model).quick_check("HANDOFF", "質問？", None)
    assert result.value.passed is True
    first, second = model.requests
    assert first.parameters.json_output is not None and second.parameters.json_output is None
    assert second.parameters.tool_choice == "StructuredOutput"


def test_given_a_provider_that_rejects_every_strategy_then_the_rejection_is_raised() -> None:
    from lambda_agents.llm import ProviderFailed
    from lambda_agents.llm.errors import RequestRejected

    model = PurposeScript(quick_check=[RequestRejected("400")] * 3)
    with pytest.raises(ProviderFailed) as raised:
        SubAgents(model).quick_check("HANDOFF", "質問？", None)
    assert raised.value.kind == "rejected"
    assert [r.parameters.json_output is not None for r in model.requests] == [True, False, False]
    assert model.requests[2].parameters.tools == ()  # the prompted strategy: the schema is in the prompt
