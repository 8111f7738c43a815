"""The Architect (docs/interview.md#the-plan): create_plan is validated against the job's fields: every field exactly
once, no unknown id; only the order is the model's."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lambda_agents.interview.rules.models import JobDefinition
from lambda_agents.interview.rules.plan import PlanInvalid, validate_plan

from tests.support.branches import Branches

from .support import JOB

IDS = st.text(alphabet="abcdefgh_", min_size=1, max_size=6).filter(lambda s: s[0] != "_")


def job_with(ids: list[str]) -> JobDefinition:
    return JobDefinition.model_validate(
        {
            "job_id": "j",
            "fields": [
                {
                    "field_id": field_id,
                    "label": field_id,
                    "intent": "i",
                    "required": True,
                    "required_facts": [],
                    "done_criteria": "d",
                }
                for field_id in ids
            ],
        }
    )


def test_given_every_field_once_in_a_new_order_when_validated_then_that_order_is_the_plan() -> None:
    assert validate_plan(["motivation", "hobby", "experience"], JOB) == ["motivation", "hobby", "experience"]


def test_given_unknown_missing_and_duplicate_ids_then_one_error_names_every_problem() -> None:
    with pytest.raises(PlanInvalid) as raised:
        validate_plan(["experience", "experience", "salary"], JOB)
    message = str(raised.value)
    assert "unknown field ids: salary" in message
    assert "missing field ids: motivation, hobby" in message
    assert "listed more than once: experience" in message
    assert "the job's fields are: experience, motivation, hobby" in message


def test_given_ids_with_surrounding_spaces_then_they_are_trimmed_not_guessed() -> None:
    assert validate_plan([" experience", "motivation ", "hobby"], JOB) == ["experience", "motivation", "hobby"]
    with pytest.raises(PlanInvalid, match="unknown field ids: Experience"):
        validate_plan(["Experience", "motivation", "hobby"], JOB)


@settings(max_examples=200, deadline=None)
@given(st.lists(IDS, min_size=1, max_size=8, unique=True), st.randoms(use_true_random=False))
def test_property_any_permutation_of_the_jobs_fields_is_a_valid_plan(ids: list[str], random: object) -> None:
    order = list(ids)
    random.shuffle(order)  # type: ignore[attr-defined]
    assert validate_plan(order, job_with(ids)) == order


def test_property_a_plan_is_accepted_exactly_when_it_lists_each_field_once() -> None:
    reached = Branches()

    @settings(max_examples=300, deadline=None)
    @given(st.lists(IDS, min_size=1, max_size=6, unique=True), st.lists(IDS, max_size=8), st.randoms())
    def example(ids: list[str], drawn: list[str], random: object) -> None:
        # Half the plans are the job's own fields in some order, so acceptance is reached too.
        plan = drawn if random.random() < 0.5 else random.sample(ids, len(ids))  # type: ignore[attr-defined]
        job = job_with(ids)
        try:
            accepted = validate_plan(plan, job)
        except PlanInvalid as error:
            reached.add("refused")
            assert sorted(plan) != sorted(ids)
            assert str(error).startswith("the plan must list every field of the job exactly once")
        else:
            reached.add("accepted")
            assert sorted(accepted) == sorted(ids) and len(accepted) == len(ids)

    example()
    reached.assert_all("accepted", "refused")
