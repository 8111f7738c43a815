"""The step-plan rules and the seq -> id resolution with its cycle check
(docs/chat-and-templates.md#step-plan-rules)."""

from __future__ import annotations

from typing import Any

import pytest
from lambda_agents.templates.models import CreateProcessTemplateDto, TemplateSource, to_process_template
from lambda_agents.templates.validation import MAX_STEPS, TemplateInvalid, check_step_plan, find_cycle
from pydantic import ValidationError


def step(seq: int, depends: list[int] | None = None, *, basis: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "seq": seq,
        "name": f"step {seq}",
        "basis": basis or ("goal" if seq == 1 else "prev"),
        "offsetDays": -10 if seq == 1 else 3,
        "dependsOn": depends if depends is not None else ([] if seq == 1 else [seq - 1]),
        **extra,
    }


def dto(*steps: dict[str, Any], name: str = "Hiring") -> CreateProcessTemplateDto:
    return CreateProcessTemplateDto.model_validate({"name": name, "stepTemplates": list(steps)})


def classes(*steps: dict[str, Any]) -> list[str]:
    return [problem.error_class for problem in check_step_plan(dto(*steps).step_templates)]


def test_given_a_contiguous_plan_with_earlier_dependencies_then_it_is_valid() -> None:
    assert classes(step(1), step(2), step(3, [1, 2])) == []


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ([], ["NoSteps"]),
        ([step(1), step(2), step(4)], ["SeqGap"]),
        ([step(2), step(3)], ["SeqGap"]),
        ([step(0), step(1)], ["SeqGap"]),
        ([step(1), step(2), step(2)], ["SeqDuplicate"]),
        ([step(1, basis="prev")], ["InvalidBasis"]),
        ([step(1), step(2, [5])], ["UnknownDependency"]),
        ([step(1), step(2, [3]), step(3, [1])], ["ForwardReference"]),
        ([step(1), step(2, [2])], ["DependencyCycle"]),
        ([step(1), step(2, [3]), step(3, [2])], ["DependencyCycle", "ForwardReference"]),
    ],
    ids=["none", "gap", "not from 1", "zero", "duplicate", "basis", "unknown", "forward", "self", "cycle"],
)
def test_given_a_plan_breaking_a_rule_then_the_rule_is_named(steps: list[dict[str, Any]], expected: list[str]) -> None:
    assert classes(*steps) == expected


def test_given_more_steps_than_one_transaction_holds_then_too_many_steps() -> None:
    steps = [step(seq) for seq in range(1, MAX_STEPS + 2)]
    assert classes(*steps) == ["TooManySteps"]
    assert classes(*steps[:MAX_STEPS]) == []


def test_given_a_gap_then_the_message_names_the_missing_numbers() -> None:
    (problem,) = check_step_plan(dto(step(1), step(2), step(5), step(6), step(7)).step_templates)
    assert "missing 3-4" in problem.message and "outside 1..5: 6, 7" in problem.message


def test_given_a_cycle_then_its_path_is_reported() -> None:
    problems = check_step_plan(dto(step(1), step(2, [4]), step(3, [2]), step(4, [3])).step_templates)
    assert problems[0].error_class == "DependencyCycle"
    assert "2 -> 4 -> 3 -> 2" in problems[0].message


def test_given_repeated_dependencies_then_they_are_stored_once() -> None:
    template = to_process_template(
        dto(step(1), step(2, [1, 1, 1])),
        template_id="t1",
        user_id="u1",
        created_at="2026-01-01T00:00:00.000+00:00",
        source=TemplateSource("dto"),
        step_ids={1: "s1", 2: "s2"},
    )
    assert template.steps[1].depends_on == ["s1"] and template.steps[1].depends_on_seq == [1]


def test_given_a_valid_plan_then_depends_on_is_resolved_from_seq_to_the_step_ids() -> None:
    template = to_process_template(
        dto(step(3, [1, 2]), step(1), step(2)),
        template_id="t1",
        user_id="u1",
        created_at="2026-01-01T00:00:00.000+00:00",
        source=TemplateSource("dto"),
        step_ids={1: "id-a", 2: "id-b", 3: "id-c"},
    )
    assert [(s.seq, s.step_id, s.depends_on) for s in template.steps] == [
        (1, "id-a", []),
        (2, "id-b", ["id-a"]),
        (3, "id-c", ["id-a", "id-b"]),
    ]


def test_given_an_invalid_plan_then_the_transform_raises_before_anything_is_built() -> None:
    with pytest.raises(TemplateInvalid) as raised:
        to_process_template(
            dto(step(1), step(3)),
            template_id="t",
            user_id="u",
            created_at="now",
            source=TemplateSource("dto"),
            step_ids={1: "a", 3: "c"},
        )
    assert raised.value.error_class == "SeqGap"


def test_find_cycle_on_id_graphs() -> None:
    assert find_cycle({"a": [], "b": ["a"], "c": ["a", "b"]}) is None
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": ["a"]}) == ["a", "a"]
    assert find_cycle({"a": ["missing"]}) is None


def test_find_cycle_handles_long_chains_without_recursion() -> None:
    chain = {index: [index - 1] if index else [] for index in range(50_000)}
    assert find_cycle(chain) is None
    chain[0] = [49_999]
    cycle = find_cycle(chain)
    assert cycle is not None and len(cycle) == 50_001


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"offsetDays": 366}, "offsetDays"),
        ({"offsetDays": -366}, "offsetDays"),
        ({"offsetDays": 1.5}, "offsetDays"),
        ({"offsetDays": "3"}, "offsetDays"),
        ({"basis": "start"}, "basis"),
        ({"name": "   "}, "name"),
        ({"name": "x" * 201}, "name"),
        ({"seq": True}, "seq"),
        ({"unknown": 1}, "unknown"),
        ({"requiredArtifacts": [{"kind": ""}]}, "kind"),
    ],
)
def test_given_a_malformed_field_then_the_dto_names_it(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as raised:
        dto(step(1, **change) if "seq" not in change else {**step(1), **change})
    assert field in str(raised.value)


def test_given_a_lone_surrogate_in_a_name_then_the_dto_rejects_it() -> None:
    with pytest.raises(ValidationError, match="name"):
        dto(step(1), name="bad \ud800")
