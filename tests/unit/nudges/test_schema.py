"""The dynamic schema (docs/nudges.md#the-output-schema): minItems = maxItems = slotCount, OpenAI subset."""

from __future__ import annotations

import json

import pytest
from lambda_agents.llm.schema import lint_strict, strict_schema
from lambda_agents.nudges.schema import create_agent_output_model, output_problems
from pydantic import ValidationError

from .conftest import valid_answer


def test_given_5_slots_when_building_the_schema_then_app_nudges_has_min_and_max_items_5() -> None:
    schema = strict_schema(create_agent_output_model(5))
    nudges = schema["properties"]["appNudges"]
    assert (nudges["minItems"], nudges["maxItems"]) == (5, 5)
    assert schema["properties"]["tiktokPosts"]["minItems"] == schema["properties"]["tiktokPosts"]["maxItems"] == 2
    assert schema["properties"]["xPosts"]["minItems"] == schema["properties"]["xPosts"]["maxItems"] == 2


@pytest.mark.parametrize("slot_count", [1, 6, 15])
def test_the_generated_schema_fits_the_openai_strict_subset(slot_count: int) -> None:
    schema = strict_schema(create_agent_output_model(slot_count))
    assert lint_strict(schema) == []
    assert "x-examples" not in json.dumps(schema) and "x-index" not in json.dumps(schema)


def test_every_field_is_required_including_enabled() -> None:
    props = strict_schema(create_agent_output_model(2))["properties"]
    for key in ("appNudges", "tiktokPosts", "xPosts"):
        item = props[key]["items"]
        assert "enabled" in item["required"]
        assert set(item["required"]) == set(item["properties"])
    assert props["appNudges"]["items"]["properties"]["tone"]["enum"] == [
        "strict",
        "gentle",
        "empathetic",
        "analytical",
        "playful",
    ]
    assert props["tiktokPosts"]["items"]["properties"]["hashtags"]["maxItems"] == 5


def test_a_wrong_number_of_nudges_does_not_validate() -> None:
    model = create_agent_output_model(3)
    with pytest.raises(ValidationError, match="appNudges"):
        model.model_validate_json(valid_answer([0, 1]))


def test_a_post_without_enabled_does_not_validate_in_new_output() -> None:
    data = json.loads(valid_answer([0]))
    del data["xPosts"][0]["enabled"]
    with pytest.raises(ValidationError, match="enabled"):
        create_agent_output_model(1).model_validate(data)


@pytest.mark.parametrize(
    ("path", "value"),
    [("caption", "c" * 2201), ("hashtags", ["#a"] * 6)],
)
def test_tiktok_limits_are_enforced(path: str, value: object) -> None:
    data = json.loads(valid_answer([0]))
    data["tiktokPosts"][0][path] = value
    with pytest.raises(ValidationError):
        create_agent_output_model(1).model_validate(data)


def test_x_text_longer_than_280_characters_does_not_validate() -> None:
    data = json.loads(valid_answer([0]))
    data["xPosts"][1]["text"] = "x" * 281
    with pytest.raises(ValidationError):
        create_agent_output_model(1).model_validate(data)


def test_slot_index_values_other_than_the_tables_are_a_problem() -> None:
    output = create_agent_output_model(3).model_validate_json(valid_answer([0, 1, 1]))
    assert any("slotIndex" in problem for problem in output_problems(output, [0, 1, 2]))
    assert output_problems(create_agent_output_model(3).model_validate_json(valid_answer([2, 0, 1])), [0, 1, 2]) == []


def test_two_morning_posts_are_a_problem() -> None:
    data = json.loads(valid_answer([0]))
    data["xPosts"][1]["slot"] = "morning"
    output = create_agent_output_model(1).model_validate(data)
    assert output_problems(output, [0]) == [
        "xPosts must hold one 'morning' and one 'evening' post, got ['morning', 'morning']"
    ]


def test_all_nudges_disabled_is_a_problem_because_zero_nudges_must_be_impossible() -> None:
    output = create_agent_output_model(2).model_validate_json(valid_answer([0, 1], enabled=False))
    assert "at least one appNudge must be enabled" in output_problems(output, [0, 1])
