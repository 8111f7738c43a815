"""The rule-based fallback's contract (docs/nudges.md#the-rule-based-fallback)."""

from __future__ import annotations

import pytest
from lambda_agents.llm.schema import strict_schema
from lambda_agents.nudges.fallback import RuleBasedFallback
from lambda_agents.nudges.schema import create_agent_output_model
from lambda_agents.nudges.slots import Slot

TABLE = [Slot(i, f"{7 + i:02d}:00", ("anxiety",)) for i in range(6)]


@pytest.fixture(params=["ja", "en"])
def output(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    return RuleBasedFallback().build(TABLE, request.param)


def test_app_nudges_length_equals_the_slot_table(output) -> None:  # type: ignore[no-untyped-def]
    assert len(output.app_nudges) == len(TABLE)
    assert [n.slot_index for n in output.app_nudges] == [s.slot_index for s in TABLE]


def test_two_tiktok_and_two_x_posts(output) -> None:  # type: ignore[no-untyped-def]
    assert len(output.tiktok_posts) == 2
    assert len(output.x_posts) == 2


def test_the_fallback_parses_with_the_normal_schema(output) -> None:  # type: ignore[no-untyped-def]
    data = output.model_dump(by_alias=True)
    create_agent_output_model(len(TABLE)).model_validate(data)
    assert set(data) == set(strict_schema(create_agent_output_model(len(TABLE)))["properties"])


def test_app_nudges_are_enabled_and_posts_disabled(output) -> None:  # type: ignore[no-untyped-def]
    assert all(n.enabled for n in output.app_nudges)
    assert not any(p.enabled for p in output.tiktok_posts)
    assert not any(p.enabled for p in output.x_posts)


def test_post_slots_are_morning_and_evening(output) -> None:  # type: ignore[no-untyped-def]
    assert [p.slot for p in output.tiktok_posts] == ["morning", "evening"]
    assert [p.slot for p in output.x_posts] == ["morning", "evening"]


def test_the_text_follows_the_language() -> None:
    assert RuleBasedFallback().build(TABLE, "ja").app_nudges[0].hook == "今日も前に進もう"
    assert RuleBasedFallback().build(TABLE, "en").app_nudges[0].hook == "Keep moving forward"


def test_the_fallback_keeps_the_tables_own_slot_indexes() -> None:
    table = [Slot(3, "09:00", ()), Slot(7, "21:00", ())]
    assert [n.slot_index for n in RuleBasedFallback().build(table, "en").app_nudges] == [3, 7]
