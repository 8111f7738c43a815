"""Every post of a schedule gets its own record and id, whatever the stored output's shape."""

from __future__ import annotations

from typing import Any

import pytest
from lambda_agents.nudges.records import post_records


def test_given_two_posts_with_the_same_platform_and_slot_then_both_are_kept_with_distinct_stable_ids() -> None:
    output = {"xPosts": [{"slot": "morning", "text": "a"}, {"slot": "morning", "text": "b"}]}
    first = post_records("u", "2026-02-02", output)
    assert [p.fields["text"] for p in first] == ["a", "b"]
    assert len({p.post_id for p in first}) == 2
    assert [p.post_id for p in post_records("u", "2026-02-02", output)] == [p.post_id for p in first]


def test_the_first_post_of_a_slot_keeps_the_id_new_schedules_always_had() -> None:
    (post,) = post_records("u", "2026-02-02", {"tiktokPosts": [{"slot": "evening"}]})
    assert post.post_id.startswith("tiktok-") and post.slot == "evening"


@pytest.mark.parametrize(
    ("output", "expected"),
    [(None, 0), ("text", 0), ({"xPosts": "x"}, 0), ({"xPosts": [1, None]}, 2), ({"tiktokPosts": [{}]}, 1)],
)
def test_given_any_stored_shape_then_no_post_is_lost_and_nothing_raises(output: Any, expected: int) -> None:
    assert len(post_records("u", "2026-02-02", output)) == expected
