"""The pending filter (docs/nudges.md#never-a-fallback-post) at the query level, query validation, and the
due timezones."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from lambda_agents.nudges.due import due_zones
from lambda_agents.nudges.pending import InvalidQuery, PendingFilter, PendingPostsQuery


@dataclass
class Page:
    items: list[dict[str, Any]]
    next_token: str | None = None
    items_read: int = 0


@dataclass
class FakeStore:
    items: list[dict[str, Any]]
    calls: list[tuple[Any, ...]] = field(default_factory=list)

    def query_pending(
        self, platform: str, local_date: str | None, slot: str | None, limit: int, token: str | None
    ) -> Page:
        self.calls.append((platform, local_date, slot, limit, token))
        return Page(self.items, None, len(self.items))


def item(post_id: str, **post: Any) -> dict[str, Any]:
    return {
        "postId": post_id,
        "userId": "u",
        "scheduleId": "u#d",
        "localDate": "2026-02-02",
        "slot": "morning",
        "post": {"slot": "morning", "caption": "c", "text": "t", "reasoning": "r", **post},
    }


@pytest.mark.parametrize("platform", ["tiktok", "x"])
def test_enabled_false_is_excluded_enabled_true_and_legacy_are_included(platform: str) -> None:
    store = FakeStore([item("on", enabled=True), item("off", enabled=False), item("legacy")])
    result = PendingPostsQuery(store).run(platform, PendingFilter())  # type: ignore[arg-type]
    assert [p["postId"] for p in result.posts] == ["on", "legacy"]


def test_tiktok_posts_carry_the_spec_fields_and_ids() -> None:
    result = PendingPostsQuery(FakeStore([item("p1", hashtags=["#a"], tone="gentle")])).run("tiktok", PendingFilter())
    assert set(result.posts[0]) == {
        "caption",
        "hashtags",
        "tone",
        "reasoning",
        "slot",
        "postId",
        "sourceUserId",
        "scheduleId",
        "date",
        "enabled",
    }
    x = PendingPostsQuery(FakeStore([item("p1")])).run("x", PendingFilter()).posts[0]
    assert set(x) == {"text", "reasoning", "slot", "postId", "sourceUserId", "scheduleId", "date", "enabled"}


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ({"slot": "noon"}, "slot"),
        ({"date": "2026-13-01"}, "date"),
        ({"date": "yesterday"}, "date"),
        ({"limit": "0"}, "limit"),
        ({"limit": "abc"}, "limit"),
        ({"nextToken": ""}, "nextToken"),
    ],
)
def test_malformed_query_values_name_the_parameter(query: dict[str, str], parameter: str) -> None:
    with pytest.raises(InvalidQuery) as raised:
        PendingFilter.parse(query)
    assert raised.value.parameter == parameter


def test_a_valid_filter_reaches_the_store() -> None:
    store = FakeStore([])
    PendingPostsQuery(store).run("x", PendingFilter.parse({"slot": "evening", "date": "2026-02-02", "limit": "20"}))
    assert store.calls == [("x", "2026-02-02", "evening", 20, None)]


def test_at_2000_utc_tokyo_is_not_due_and_at_2000_utc_the_day_before_5am_tokyo_is() -> None:
    zones = ["Asia/Tokyo", "Europe/London", "America/New_York"]
    due = list(due_zones(datetime(2026, 2, 1, 20, 0, tzinfo=UTC), 5, zones=zones))
    assert [(z.timezone, z.local_date) for z in due] == [("Asia/Tokyo", "2026-02-02")]
    due = list(due_zones(datetime(2026, 2, 2, 10, 5, tzinfo=UTC), 5, zones=zones))
    assert [(z.timezone, z.local_date) for z in due] == [("America/New_York", "2026-02-02")]


def test_every_zone_is_due_exactly_once_a_day() -> None:
    seen: dict[str, int] = {}
    for hour in range(24):
        for zone in due_zones(datetime(2026, 6, 1, hour, 5, tzinfo=UTC), 5):
            seen[zone.timezone] = seen.get(zone.timezone, 0) + 1
    assert set(seen.values()) == {1}
    assert "Asia/Kolkata" in seen
