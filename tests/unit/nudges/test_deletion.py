"""Deleting a user's nudge data, with in-memory ports: the order that makes a deletion cut short
finishable and a generation under way harmless, the counts, and the dates whose generator records
a deletion looks for."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo, available_timezones

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lambda_agents.nudges.deletion import (
    GenerationInFlight,
    GenerationRecord,
    NothingToDelete,
    NudgeDataDeletion,
    UserSchedule,
    dates_a_run_can_hold,
)
from lambda_agents.nudges.generation import LocalDateOutOfRange, check_local_date
from lambda_agents.nudges.profile import UserProfile
from lambda_agents.nudges.records import post_records

NOW = datetime(2026, 3, 10, 23, 30, tzinfo=UTC)
OUTPUT = {
    "tiktokPosts": [{"slot": "morning", "caption": "a"}, {"slot": "evening", "caption": "b"}],
    "xPosts": [{"slot": "morning", "text": "c"}],
}


class Store:
    """Profile, schedules, posts and records of one user, with a log of every call."""

    def __init__(self, *, profile: bool = True, dates: Sequence[str] = (), held: Sequence[str] = ()) -> None:
        self.log: list[str] = []
        self.profile, self.marked = profile, False
        self.schedules = {day: OUTPUT for day in dates}
        self.posts = {post.post_id for day in dates for post in post_records("u1", day, OUTPUT)}
        self.records = {f"rec-{day}": f"rec-{day}" in {f"rec-{d}" for d in held} for day in dates}

    # ProfileEraser
    def mark_deleting(self, user_id: str, now: str) -> bool:
        self.log.append("mark")
        self.marked = self.profile
        return self.profile

    def delete_marked(self, user_id: str) -> bool:
        self.log.append("delete profile")
        deleted, self.profile = self.profile and self.marked, False
        return deleted

    # ScheduleEraser
    def user_schedules(self, user_id: str) -> list[UserSchedule]:
        self.log.append("read schedules")
        return [UserSchedule(day, output) for day, output in sorted(self.schedules.items())]

    def existing_posts(self, post_ids: list[str]) -> list[str]:
        return sorted(set(post_ids) & self.posts)

    def delete_posts(self, post_ids: list[str]) -> int:
        self.log.append(f"delete {len(post_ids)} posts")
        self.posts -= set(post_ids)
        return len(post_ids)

    def delete_schedules(self, user_id: str, local_dates: list[str]) -> int:
        self.log.append(f"delete {len(local_dates)} schedules")
        for day in local_dates:
            self.schedules.pop(day, None)
        return len(local_dates)

    # GenerationRecords
    def record_ids(self, user_id: str, local_dates: Sequence[str]) -> list[str]:
        return [f"rec-{day}" for day in local_dates]

    def stored(self, record_ids: Sequence[str], now: datetime) -> list[GenerationRecord]:
        self.log.append("read records")
        return [GenerationRecord(i, self.records[i]) for i in record_ids if i in self.records]

    def delete(self, record_ids: Sequence[str]) -> int:
        self.log.append(f"delete {len(record_ids)} records")
        for record_id in record_ids:
            self.records.pop(record_id, None)
        return len(record_ids)


def deletion(store: Store) -> NudgeDataDeletion:
    return NudgeDataDeletion(store, store, store, clock=lambda: NOW)


def test_the_profile_is_marked_first_the_posts_go_before_anything_else_and_the_profile_last() -> None:
    store = Store(dates=["2026-03-09", "2026-03-10"])

    deleted = deletion(store).delete("u1")

    assert deleted.as_response() == {"deleted": {"profiles": 1, "schedules": 2, "posts": 6, "generationRecords": 2}}
    assert store.log == [
        "mark",
        "read schedules",
        "read records",
        "delete 6 posts",
        "delete 2 records",
        "delete 2 schedules",
        "delete profile",
    ]
    assert (store.profile, store.schedules, store.posts, store.records) == (False, {}, set(), {})


def test_given_a_run_under_way_then_only_the_posts_go_and_the_rest_waits_for_a_repeat() -> None:
    store = Store(dates=["2026-03-09", "2026-03-10"], held=["2026-03-10"])

    with pytest.raises(GenerationInFlight) as busy:
        deletion(store).delete("u1")

    assert busy.value.posts_deleted == 6 and busy.value.retry_after_s > 0
    assert store.posts == set() and len(store.schedules) == 2 and len(store.records) == 2
    assert store.profile and store.marked  # marked: nothing readable, nothing more generated
    store.records["rec-2026-03-10"] = False  # the run ended and stored its outcome
    assert deletion(store).delete("u1").as_response()["deleted"] == {
        "profiles": 1,
        "schedules": 2,
        "posts": 0,
        "generationRecords": 2,
    }


def test_given_nothing_stored_then_nothing_to_delete() -> None:
    with pytest.raises(NothingToDelete):
        deletion(Store(profile=False)).delete("u1")


def test_given_schedules_without_a_profile_then_they_are_deleted_all_the_same() -> None:
    store = Store(profile=False, dates=["2026-03-10"])
    assert deletion(store).delete("u1").as_response()["deleted"] == {
        "profiles": 0,
        "schedules": 1,
        "posts": 3,
        "generationRecords": 1,
    }


ZONES = sorted(zone for zone in available_timezones() if "/" in zone or zone == "UTC")


@given(
    now=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)),
    zone=st.sampled_from(ZONES),
)
def test_every_date_the_generator_would_take_now_is_among_the_dates_a_deletion_checks(now: datetime, zone: str) -> None:
    profile = UserProfile.model_validate({"userId": "u1", "problems": ["anxiety"], "timezone": zone})
    today = now.astimezone(ZoneInfo(zone)).date()
    checked = set(dates_a_run_can_hold(now.date()))
    for offset in range(-4, 4):
        day = today + timedelta(days=offset)
        try:
            check_local_date(day.isoformat(), profile, now)
        except LocalDateOutOfRange:
            continue
        assert day.isoformat() in checked, (zone, now, day)


def test_the_dates_a_deletion_checks_are_a_short_window_around_utcs_today() -> None:
    assert dates_a_run_can_hold(date(2026, 3, 10)) == [f"2026-03-{day:02d}" for day in range(7, 13)]
