"""The slot table (docs/nudges.md#the-slot-table: decided by the system) and the max_tokens ramp
(docs/nudges.md#the-token-budget-ramp)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lambda_agents.nudges.slots import build_slot_table, parse_local_time, trim_slots, validate_schedule_map
from lambda_agents.nudges.tokens import CommanderTokenPolicy, estimate_max_tokens


def test_estimate_max_tokens_for_15_slots_at_attempt_0_follows_the_spec_formula() -> None:
    assert estimate_max_tokens(15, 0) == 4095  # ceil((500 + 15*150 + 400) * 1.3)


def test_estimate_max_tokens_grows_with_the_attempt() -> None:
    assert estimate_max_tokens(15, 2) > estimate_max_tokens(15, 1) > estimate_max_tokens(15, 0)
    assert estimate_max_tokens(15, 1) == 4725


def test_the_token_policy_is_capped_at_its_ceiling() -> None:
    assert CommanderTokenPolicy(15, ceiling=4500).max_tokens(2) == 4500


def test_problems_merge_dedupe_and_sort_into_indexed_slots() -> None:
    table = build_slot_table(["a", "b"], {"a": ["22:00", "07:00"], "b": ["07:00", "12:00"]}, min_spacing_minutes=30)
    assert [(s.slot_index, s.local_time) for s in table] == [(0, "07:00"), (1, "12:00"), (2, "22:00")]
    assert table[0].problems == ("a", "b")


def test_times_closer_than_the_spacing_collapse_into_the_earlier_slot() -> None:
    table = build_slot_table(["a", "b"], {"a": ["07:00"], "b": ["07:20"]}, min_spacing_minutes=30)
    assert [(s.local_time, s.problems) for s in table] == [("07:00", ("a", "b"))]


def test_unknown_problems_add_no_slot() -> None:
    assert build_slot_table(["nope"], {"a": ["07:00"]}) == []


def test_trim_keeps_the_first_and_last_time_and_the_maximum() -> None:
    minutes = list(range(0, 24 * 60, 60))
    kept = trim_slots(minutes, 30, 5)
    assert len(kept) == 5 and kept[0] == 0 and kept[-1] == 23 * 60


def test_a_malformed_schedule_map_is_named() -> None:
    with pytest.raises(ValueError, match=r"'smoking'.*'25:00'"):
        validate_schedule_map({"smoking": ["25:00"]})
    with pytest.raises(ValueError):
        parse_local_time("7")


@given(
    st.lists(st.integers(0, 24 * 60 - 1), max_size=60),
    st.integers(0, 180),
    st.integers(1, 20),
)
def test_trimmed_slots_are_sorted_unique_spaced_and_bounded(minutes: list[int], spacing: int, maximum: int) -> None:
    kept = trim_slots(minutes, spacing, maximum)
    assert kept == sorted(set(kept))
    assert len(kept) <= maximum
    assert all(b - a >= spacing for a, b in itertools.pairwise(kept))
    assert (len(kept) > 0) == (len(minutes) > 0)
