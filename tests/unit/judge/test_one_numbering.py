"""One numbering in one answer: the judge's answer names its rule by ``ruleIndex`` (0-based) alone.

The model is shown rules numbered from 1 (tags ``[MOVEMENT:N]``, ``step``, ``matched_index``), so a
reason that repeats such a number ("rule 2", "tag [REVIEW:2]") beside ``ruleIndex: 1`` reads as two
rules. Every reason the product writes speaks of the rule without a number, and the instructions
ask the model to name the rule by its condition."""

from __future__ import annotations

import re

import pytest
from lambda_agents.judge.candidates import select_candidates
from lambda_agents.judge.instructions import judge_messages, structured_messages
from lambda_agents.judge.models import EvaluationAnswer, JudgeRequest, Rule, StepAnswer
from lambda_agents.judge.offline import RESPONDERS
from lambda_agents.judge.service import JudgeService
from lambda_agents.llm import ChatResponse, Usage
from lambda_agents.llm.offline_model import OfflineModel

from tests.unit.llm.scripted_model import ScriptedModel

# A rule named by a number: "rule 2", "rule #2", "rule number 2", a tag "[REVIEW:2]", "[JUDGE:2]".
A_NUMBERED_RULE = re.compile(r"(?i)\brules?\s*(?:#|no\.?|number)?\s*\d|\[[^\]:]+:\s*-?\d+\s*\]")
RULES = [{"condition": "The review approves the change"}, {"condition": "The review requests fixes"}]
OUTPUT = "Two tests fail. Fixes requested before merge."


def _request(**overrides: object) -> JudgeRequest:
    return JudgeRequest.model_validate({"movement": "review", "rules": RULES, "output": OUTPUT, **overrides})


def text(content: str) -> ChatResponse:
    return ChatResponse(content, "stop", usage=Usage(10, 5))


@pytest.mark.parametrize("mode", ["structured", "tag"])
def test_the_offline_judge_names_its_rule_by_ruleindex_alone(mode: str) -> None:
    judgment = JudgeService(OfflineModel(RESPONDERS), sleep=lambda _: None).judge(_request(instructionMode=mode))

    assert judgment.rule_index == 1
    assert not A_NUMBERED_RULE.search(judgment.reason), judgment.reason


def test_a_tag_stage_says_which_tag_decided_without_its_number() -> None:
    model = ScriptedModel(text("no json here"), text("no json here"), text("[REVIEW:2]"))

    judgment = JudgeService(model, sleep=lambda _: None).judge(_request())

    assert judgment.rule_index == 1 and judgment.method.value == "tag_fallback"
    assert not A_NUMBERED_RULE.search(judgment.reason), judgment.reason
    assert "tag" in judgment.reason


def test_the_ai_judges_tag_says_which_tag_decided_without_its_number() -> None:
    model = ScriptedModel(text("x"), text("x"), text("no tag"), text("not json"), text("not json"), text("[JUDGE:2]"))

    judgment = JudgeService(model, sleep=lambda _: None).judge(_request())

    assert judgment.rule_index == 1 and judgment.method.value == "ai_judge"
    assert not A_NUMBERED_RULE.search(judgment.reason), judgment.reason


def test_the_model_is_asked_to_name_the_rule_by_its_words_not_its_number() -> None:
    candidates = select_candidates([Rule.model_validate(rule) for rule in RULES], interactive=False)
    asks = [
        structured_messages("review", OUTPUT, candidates, "structured")[1]["content"],
        judge_messages(OUTPUT, candidates, as_tag=False)[1]["content"],
        str(StepAnswer.model_json_schema()["properties"]["reason"]["description"]),
        str(EvaluationAnswer.model_json_schema()["properties"]["reason"]["description"]),
    ]

    for ask in asks:
        assert "not by its number" in ask, ask


def test_the_pattern_finds_a_rule_named_by_number() -> None:
    for numbered in ("keywords of rule 2 occur", "tag [REVIEW:2]", "judge tag [JUDGE: 2 ]", "Rule #1 applies"):
        assert A_NUMBERED_RULE.search(numbered), numbered
    assert not A_NUMBERED_RULE.search("the answer's last movement tag names this rule; 3 keywords occur")
