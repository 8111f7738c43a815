"""Property tests: the plan rules answer any plan with documented error classes only; a plan built
to the rules always passes and resolves to a DAG over step ids."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from lambda_agents.templates.models import CreateProcessTemplateDto, TemplateSource, to_process_template
from lambda_agents.templates.validation import MAX_STEPS, check_step_plan, find_cycle

from tests.support.branches import Branches

CLASSES = {
    "NoSteps",
    "TooManySteps",
    "SeqGap",
    "SeqDuplicate",
    "InvalidBasis",
    "UnknownDependency",
    "ForwardReference",
    "DependencyCycle",
}


def _dto(steps: list[dict[str, Any]]) -> CreateProcessTemplateDto:
    return CreateProcessTemplateDto.model_validate({"name": "t", "stepTemplates": steps})


ANY_STEPS = st.lists(
    st.fixed_dictionaries(
        {
            "seq": st.integers(min_value=-3, max_value=12),
            "name": st.just("s"),
            "basis": st.sampled_from(["goal", "prev"]),
            "offsetDays": st.integers(min_value=-365, max_value=365),
            "dependsOn": st.lists(st.integers(min_value=-2, max_value=14), max_size=4),
        }
    ),
    max_size=12,
)


@st.composite
def valid_steps(draw: st.DrawFn, max_steps: int = MAX_STEPS) -> list[dict[str, Any]]:
    count = draw(st.integers(min_value=1, max_value=max_steps))
    order = draw(st.permutations(range(1, count + 1)))
    return [
        {
            "seq": seq,
            "name": f"s{seq}",
            "basis": "goal" if seq == 1 else draw(st.sampled_from(["goal", "prev"])),
            "offsetDays": draw(st.integers(min_value=-365, max_value=365)),
            "dependsOn": draw(st.lists(st.integers(min_value=1, max_value=seq - 1), max_size=4)) if seq > 1 else [],
        }
        for seq in order
    ]


def test_given_any_plan_then_only_documented_classes_are_reported() -> None:
    reached = Branches()

    @settings(max_examples=400, deadline=None)
    # A plan drawn at random is almost never valid: half the plans are built to the rules, as long as ANY_STEPS'.
    @given(st.one_of(ANY_STEPS, valid_steps(max_steps=12)))
    def example(steps: list[dict[str, Any]]) -> None:
        problems = check_step_plan(_dto(steps).step_templates)
        assert {problem.error_class for problem in problems} <= CLASSES
        if problems:
            reached.add("refused")
            return
        reached.add("accepted")
        seqs = sorted(step["seq"] for step in steps)
        assert seqs == list(range(1, len(steps) + 1))
        assert all(d < step["seq"] for step in steps for d in step["dependsOn"])

    example()
    reached.assert_all("accepted", "refused")


@settings(max_examples=200, deadline=None)
@given(valid_steps())
def test_given_a_plan_built_to_the_rules_then_it_passes_and_resolves_to_a_dag(steps: list[dict[str, Any]]) -> None:
    dto = _dto(steps)
    assert check_step_plan(dto.step_templates) == []
    ids = {step["seq"]: f"id{step['seq']}" for step in steps}
    template = to_process_template(
        dto, template_id="t", user_id="u", created_at="c", source=TemplateSource("dto"), step_ids=ids
    )
    assert [step.seq for step in template.steps] == list(range(1, len(steps) + 1))
    position = {step.step_id: step.seq for step in template.steps}
    assert all(position[target] < step.seq for step in template.steps for target in step.depends_on)
    assert find_cycle({step.step_id: step.depends_on for step in template.steps}) is None


def test_find_cycle_returns_a_real_closed_path_or_none_for_a_dag() -> None:
    reached = Branches()

    @settings(max_examples=300, deadline=None)
    @given(st.dictionaries(st.integers(0, 15), st.lists(st.integers(0, 15), max_size=4), max_size=16))
    def example(graph: dict[int, list[int]]) -> None:
        cycle = find_cycle(graph)
        if cycle is None:
            reached.add("dag")
            # A DAG has a topological order: removing nodes without edges to remaining ones empties it.
            remaining = set(graph)
            for _ in range(len(graph)):
                free = {n for n in remaining if not any(t in remaining for t in graph[n])}
                remaining -= free
            assert not remaining
        else:
            reached.add("cycle")
            assert cycle[0] == cycle[-1]
            assert all(b in graph[a] for a, b in itertools.pairwise(cycle))

    example()
    reached.assert_all("dag", "cycle")
