"""The status judge (docs/judge.md) with a scripted model: every stage, fall-through and edge case."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from lambda_agents.judge import instructions
from lambda_agents.judge.candidates import NoCandidates, detect_by_rule_tag, last_numbered_tag, select_candidates
from lambda_agents.judge.instructions import judge_prompt_version
from lambda_agents.judge.models import JudgeRequest, Method, Rule
from lambda_agents.judge.service import JudgeService, JudgmentFailed
from lambda_agents.llm import ChatResponse, Strategy, ToolCall, Usage
from lambda_agents.llm.errors import ProviderUnavailable, RequestRejected
from pydantic import ValidationError

from tests.unit.llm.scripted_model import ScriptedModel

RULES = [
    {"condition": "approved", "tag": "[REVIEW:1]"},
    {"condition": "needs fixes", "tag": "[REVIEW:2]"},
    {"condition": "ask the user", "interactiveOnly": True},
    {"condition": "blocked", "tag": "[REVIEW:4]"},
]


def text(content: str) -> ChatResponse:
    return ChatResponse(content, "stop", usage=Usage(10, 5))


def step_json(step: Any) -> ChatResponse:
    return text(json.dumps({"step": step, "reason": "because"}))


def request(**overrides: Any) -> JudgeRequest:
    return JudgeRequest.model_validate({"movement": "review", "rules": RULES, "output": "the output", **overrides})


@pytest.fixture
def sleepless() -> Iterator[None]:
    yield


def judge(model: ScriptedModel, **overrides: Any) -> Any:
    result = JudgeService(model, sleep=lambda _: None).judge(request(**overrides))
    model.assert_consumed()
    return result


def test_given_no_rules_then_the_request_is_rejected_naming_rules_before_any_call() -> None:
    with pytest.raises(ValidationError, match="rules"):
        request(rules=[])


def test_given_only_interactive_rules_in_a_non_interactive_run_then_no_candidates_without_any_call() -> None:
    with pytest.raises(NoCandidates):
        JudgeService(ScriptedModel()).judge(request(rules=[{"condition": "ask", "interactiveOnly": True}]))


def test_given_one_candidate_then_auto_select_without_an_llm_call() -> None:
    model = ScriptedModel()
    result = judge(model, rules=[{"condition": "ask", "interactiveOnly": True}, {"condition": "done"}])
    assert (result.rule_index, result.method) == (1, Method.AUTO_SELECT)
    assert model.requests == []


def test_numbers_are_the_callers_and_interactive_only_rules_are_not_shown() -> None:
    # rules 1, 2 and 4 are candidates; the model answers in the caller's numbering
    model = ScriptedModel(step_json(4))
    result = judge(model)
    assert (result.rule_index, result.method) == (3, Method.STRUCTURED_OUTPUT)
    messages = json.dumps(model.requests[0].messages, ensure_ascii=False)
    assert "ask the user" not in messages
    assert "| 4 | blocked |" in messages and "[REVIEW:4] blocked" in messages


@pytest.mark.parametrize("phase3", [True, False])
def test_given_rules_approve_ask_user_fix_then_review_3_names_fix_in_both_phases(phase3: bool) -> None:
    rules = [{"condition": "approve"}, {"condition": "ask the user", "interactiveOnly": True}, {"condition": "fix"}]
    output = "Earlier: [REVIEW:1]. Verdict: [REVIEW:3]"
    model = ScriptedModel(RequestRejected("schema"), text(output)) if phase3 else ScriptedModel()
    result = judge(model, rules=rules, output=output, phase3=phase3)
    assert (result.rule_index, result.method) == (2, Method.TAG_FALLBACK)


@pytest.mark.parametrize("phase3", [True, False])
def test_given_a_last_tag_naming_an_interactive_only_rule_then_the_stage_fails_and_the_ai_judge_decides(
    phase3: bool,
) -> None:
    rules = [{"condition": "approve"}, {"condition": "ask the user", "interactiveOnly": True}, {"condition": "fix"}]
    output = "Quoted [REVIEW:3]. Verdict: [REVIEW:2]"  # never mapped to fix, never back to the quoted tag
    evaluation = text(json.dumps({"matched_index": 1, "reason": "approved"}))
    steps = (RequestRejected("schema"), text(output), evaluation) if phase3 else (evaluation,)
    result = judge(ScriptedModel(*steps), rules=rules, output=output, phase3=phase3)
    assert (result.rule_index, result.method) == (0, Method.AI_JUDGE)
    failed = [s for s in result.stages if s.status == "error"]
    assert failed[-1].error == "not_a_candidate" if phase3 else failed[-1].error == "no_tag"


@pytest.mark.parametrize("answer", [{"step": 3}, {"matched_index": 3}])
def test_given_an_answer_naming_an_interactive_only_rule_then_it_is_rejected_never_mapped(
    answer: dict[str, Any],
) -> None:
    body = json.dumps({**answer, "reason": "r"})
    if "step" in answer:
        model = ScriptedModel(text(body), text(body), text("[REVIEW:2]"))
        expected = (1, Method.TAG_FALLBACK)
    else:
        model = ScriptedModel(RequestRejected("s"), text("none"), text(body), text(body), text("[JUDGE:3]"))
        with pytest.raises(JudgmentFailed) as failed:
            judge(model)
        assert [s.error for s in failed.value.stages] == ["rejected", "no_tag", "not_a_candidate"]
        return
    result = judge(model)
    assert (result.rule_index, result.method) == expected


def test_interactive_runs_keep_interactive_only_rules() -> None:
    result = judge(ScriptedModel(step_json(3)), interactive=True)
    assert result.rule_index == 2


@pytest.mark.parametrize("bad", [0, 3, 5, -1, "2", 1.5])
def test_a_step_that_names_no_candidate_is_retried_then_falls_through(bad: Any) -> None:
    model = ScriptedModel(step_json(bad), step_json(bad), text("[REVIEW:2]"))
    result = judge(model)
    assert (result.rule_index, result.method) == (1, Method.TAG_FALLBACK)
    assert [s.status for s in result.stages] == ["error", "done", "skipped"]


def test_the_last_tag_wins_because_agents_quote_earlier_ones() -> None:
    model = ScriptedModel(RequestRejected("schema"), text("I saw [REVIEW:1] quoted above.\nVerdict: [review:4]"))
    result = judge(model)
    assert (result.rule_index, result.method) == (3, Method.TAG_FALLBACK)


@pytest.mark.parametrize(
    "answer",
    ["[OTHER:1]", "[REVIEW:0]", "[REVIEW:9]", "[REVIEW:3]", "no tag at all", "[REVIEW:2] then [REVIEW:7]"],
)
def test_a_wrong_tag_fails_stage_two_and_stage_three_decides(answer: str) -> None:
    model = ScriptedModel(
        RequestRejected("schema"), text(answer), text(json.dumps({"matched_index": 2, "reason": "r"}))
    )
    result = judge(model)
    assert (result.rule_index, result.method) == (1, Method.AI_JUDGE)
    assert [s.status for s in result.stages] == ["error", "error", "done"]


def test_stage_three_falls_back_to_the_judge_tag() -> None:
    model = ScriptedModel(
        RequestRejected("schema"),
        text("none"),
        RequestRejected("schema again"),
        text("I pick [JUDGE:1]"),
    )
    result = judge(model)
    assert (result.rule_index, result.method) == (0, Method.AI_JUDGE)


def test_all_stages_failing_is_an_error_naming_the_movement() -> None:
    model = ScriptedModel(
        ProviderUnavailable("500"),
        ProviderUnavailable("500"),
        text("no tag"),
        RequestRejected("schema"),
        text("[JUDGE:0]"),
    )
    with pytest.raises(JudgmentFailed, match="movement 'review'") as raised:
        judge(model)
    assert [s.stage for s in raised.value.stages] == ["structured_output", "phase3_tag", "ai_judge"]
    assert all(s.status == "error" for s in raised.value.stages)


def test_tool_strategy_reads_the_structured_output_tool_call() -> None:
    call = ToolCall("c1", "StructuredOutput", json.dumps({"step": 2, "reason": "r"}))
    model = ScriptedModel(ChatResponse(None, "tool_calls", tool_calls=(call,)))
    result = judge(model, strategy="tool")
    assert result.rule_index == 1
    assert model.requests[0].parameters.tool_choice == "StructuredOutput"


def test_prompted_strategy_injects_the_opencode_instruction_and_extracts_json() -> None:
    model = ScriptedModel(text('Sure!\n```json\n{"step": 2, "reason": "r"}\n```\nDone.'))
    result = judge(model, strategy=Strategy.PROMPTED)
    assert result.rule_index == 1
    assert "You MUST respond with ONLY a valid JSON object" in model.requests[0].messages[-1]["content"]


def test_each_stage_has_its_own_instruction() -> None:
    model = ScriptedModel(RequestRejected("schema"), text("x"), text(json.dumps({"matched_index": 1, "reason": "r"})))
    judge(model)
    stage1, stage2, stage3 = (json.dumps(r.messages) for r in model.requests)
    assert "rule number" in stage1 and "[REVIEW:1]" in stage1  # structured mode lists the tags as fallback
    assert "exactly one tag" in stage2
    assert "impartial judge" in stage3
    assert (
        model.requests[1].parameters.json_output is None and model.requests[1].parameters.tools == ()
    )  # stage 2 has no schema


def test_tag_instruction_mode_asks_for_the_tag_line() -> None:
    model = ScriptedModel(step_json(1))
    judge(model, instructionMode="tag")
    assert "output its tag on one line" in json.dumps(model.requests[0].messages)


def test_phase1_fallback_detects_the_rule_from_the_output_tag_without_a_call() -> None:
    model = ScriptedModel()
    result = judge(model, phase3=False, output="quoted [REVIEW:1] ... final [REVIEW:2]")
    assert (result.rule_index, result.method) == (1, Method.TAG_FALLBACK)
    assert model.requests == []


def test_given_phase3_off_and_no_tag_in_the_phase1_output_then_the_ai_judge_decides_among_the_candidates() -> None:
    model = ScriptedModel(text(json.dumps({"matched_index": 4, "reason": "blocked"})))
    result = judge(model, phase3=False, output="no tag here")
    assert (result.rule_index, result.method) == (3, Method.AI_JUDGE)
    assert [(s.stage, s.status, s.error) for s in result.stages] == [
        ("phase1_tag", "error", "no_tag"),
        ("ai_judge", "done", None),
    ]
    assert "ask the user" not in json.dumps(model.requests[0].messages)


def test_given_phase3_off_and_the_ai_judge_failing_too_then_the_judgment_fails() -> None:
    model = ScriptedModel(RequestRejected("schema"), text("no tag either"))
    with pytest.raises(JudgmentFailed):
        judge(model, phase3=False, output="no tag here")


def test_usage_counts_every_stage_including_failed_ones() -> None:
    model = ScriptedModel(step_json(9), step_json(9), text("[REVIEW:1]"))
    result = judge(model)
    assert result.total_tokens == 3 * 15


def test_tag_names_are_regex_escaped() -> None:
    assert last_numbered_tag("[a.b:2]", "a.b") == 2
    assert last_numbered_tag("[axb:2]", "a.b") is None
    assert last_numbered_tag("[A+B:1]", "a+b") == 1


def test_candidate_numbers_are_the_callers_after_filtering() -> None:
    rules = [
        Rule(condition="a", interactiveOnly=True),
        Rule(condition="b"),
        Rule(condition="c", interactiveOnly=True),
        Rule(condition="d"),
    ]
    candidates = select_candidates(rules, interactive=False)
    assert [(c.number, c.original_index) for c in candidates] == [(2, 1), (4, 3)]
    assert detect_by_rule_tag("[MOVE:4]", "move", rules, candidates) is candidates[1]
    assert detect_by_rule_tag("[MOVE:2]", "move", rules, candidates) is candidates[0]
    assert detect_by_rule_tag("[MOVE:2] then [MOVE:3]", "move", rules, candidates) is None
    assert detect_by_rule_tag("[MOVE:1]", "move", rules, candidates) is None


@pytest.mark.parametrize("movement", ["", "a[b", "x:y", " lead"])
def test_malformed_movement_names_are_rejected(movement: str) -> None:
    with pytest.raises(ValueError, match="movement"):
        request(movement=movement)


def priced(content: str, model: str = "gpt-4o") -> ChatResponse:
    return ChatResponse(content, "stop", usage=Usage(1000, 20, cached_prompt_tokens=500), model=model)


def test_a_judgment_carries_every_stages_calls_with_the_model_the_prompt_version_tokens_and_cost() -> None:
    # Stage 1 names no candidate twice (billed), stage 2's tag matches.
    model = ScriptedModel(
        priced(json.dumps({"step": 9, "reason": "r"})),
        priced(json.dumps({"step": 9, "reason": "r"})),
        priced("[REVIEW:2]"),
    )
    result = judge(model)
    assert result.method is Method.TAG_FALLBACK
    account = result.as_response()["account"]
    assert account == {
        "model": "gpt-4o",
        "promptVersion": judge_prompt_version(),
        "promptTokens": 3000,
        "cachedTokens": 1500,
        "completionTokens": 60,
        "billing": "standard",
        "costUsd": pytest.approx(3 * (500 * 2.5 + 500 * 1.25 + 20 * 10.0) / 1_000_000),
        "attempts": 3,
    }


def test_a_judgment_no_stage_matched_still_carries_what_its_calls_cost() -> None:
    model = ScriptedModel(*[ProviderUnavailable("500")] * 8)
    with pytest.raises(JudgmentFailed) as failed:
        judge(model)
    assert failed.value.account is not None and failed.value.account.attempts >= 3


def test_the_judge_prompt_version_follows_its_instructions() -> None:
    before = judge_prompt_version()
    judge_prompt_version.cache_clear()
    original = instructions.OPENCODE_INSTRUCTION
    try:
        instructions.OPENCODE_INSTRUCTION = original + " Be brief."
        assert judge_prompt_version() != before
    finally:
        instructions.OPENCODE_INSTRUCTION = original
        judge_prompt_version.cache_clear()
    assert judge_prompt_version() == before
