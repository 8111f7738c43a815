"""The instruction each stage sends (each stage asks in its own way: docs/judge.md#the-three-stages).

Stage 1 asks for the rule number as JSON; in ``structured`` mode it also lists the tags as a
fallback, in ``tag`` mode it asks for the tag line only. Stage 2 asks for one tag line. Stage 3
asks a judge to evaluate the conditions. The agent's output goes in a delimited block and is
never logged.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from ..llm.accounting import prompt_version
from .candidates import Candidate
from .models import EvaluationAnswer, StepAnswer

OPENCODE_INSTRUCTION = (
    "---\nIMPORTANT: You MUST respond with ONLY a valid JSON object matching this schema. "
    "No other text, no markdown code blocks, no explanation.\n```json\n{schema}\n```"
)


def criteria_table(candidates: list[Candidate]) -> str:
    rows = ["| # | condition |", "|---|---|"]
    rows += [f"| {c.number} | {c.rule.condition.replace('|', '/')} |" for c in candidates]
    return "\n".join(rows)


def output_block(output: str) -> str:
    return f"<agent_output>\n{output}\n</agent_output>"


def tag_list(movement: str, candidates: list[Candidate]) -> str:
    return "\n".join(f"- [{movement.upper()}:{c.number}] {c.rule.condition}" for c in candidates)


def structured_messages(movement: str, output: str, candidates: list[Candidate], mode: str) -> list[dict[str, Any]]:
    if mode == "structured":
        ask = (
            "Decide which rule the agent's output matches. Return the matched rule number (1-based) "
            "as `step` and a brief `reason` that names the rule by its condition, not by its number."
            "\nIf you cannot return structured output, output exactly "
            "one of these tags on one line instead:\n" + tag_list(movement, candidates)
        )
    else:
        ask = "Decide which rule the agent's output matches and output its tag on one line:\n" + tag_list(
            movement, candidates
        )
    system = f"You judge the status of the movement '{movement}'.\n\nRules:\n{criteria_table(candidates)}"
    return [{"role": "system", "content": system}, {"role": "user", "content": f"{ask}\n\n{output_block(output)}"}]


def tag_messages(movement: str, output: str, candidates: list[Candidate]) -> list[dict[str, Any]]:
    system = (
        f"You judge the status of the movement '{movement}'. Output exactly one tag on one line, "
        f"nothing else. Tags:\n{tag_list(movement, candidates)}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": output_block(output)}]


def judge_messages(output: str, candidates: list[Candidate], as_tag: bool) -> list[dict[str, Any]]:
    conditions = "\n".join(f"{c.number}. {c.rule.condition}" for c in candidates)
    if as_tag:
        ask = "Answer with exactly one line `[JUDGE:N]`, where N is the number of the matching condition."
    else:
        ask = (
            "Return `matched_index` (the 1-based number of the matching condition) and a brief `reason` "
            "that names the condition by its words, not by its number."
        )
    system = "You are an impartial judge. Evaluate which condition the text satisfies.\nConditions:\n" + conditions
    return [{"role": "system", "content": system}, {"role": "user", "content": f"{ask}\n\n{output_block(output)}"}]


def opencode_instruction(schema: dict[str, Any]) -> str:
    return OPENCODE_INSTRUCTION.format(schema=json.dumps(schema, indent=2))


@cache
def judge_prompt_version() -> str:
    """The version of every judge stage's prompt (``llm.accounting.prompt_version``): each
    stage's messages rendered with placeholders instead of the caller's movement, rules and output
    (the templates, not the text filled in), the answers' schemas and the prompted strategy's
    instruction. Any change to one of them is a new version."""
    return prompt_version(
        structured_messages("{movement}", "{output}", [], "structured"),
        structured_messages("{movement}", "{output}", [], "tag"),
        tag_messages("{movement}", "{output}", []),
        judge_messages("{output}", [], as_tag=False),
        judge_messages("{output}", [], as_tag=True),
        OPENCODE_INSTRUCTION,
        StepAnswer.model_json_schema(),
        EvaluationAnswer.model_json_schema(),
    )
