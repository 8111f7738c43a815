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
from lambda_agents.nudges.profile import UserProfile

from tests.support.branches import Branches
from tests.support.nudge_fakes import MemoryGenerationRecords, MemorySchedules, MemoryUsers, schedule_record

from .conftest import generator_takes

NOW = datetime(2026, 3, 10, 23, 30, tzinfo=UTC)
OUTPUT = {
    "tiktokPosts": [{"slot": "morning", "caption": "a"}, {"slot": "evening", "caption": "b"}],
    "xPosts": [{"slot": "morning", "text": "c"}],
}
PROFILE = UserProfile.model_validate({"userId": "u1", "problems": ["anxiety"], "timezone": "Asia/Tokyo"})


class Store:
    """One user's profile, schedules, posts and generator records on the in-memory stores held to
    the adapters' contract (``tests.support.nudge_fakes``), with a log of the calls whose order a
    deletion promises."""

    def __init__(self, *, profile: bool = True, dates: Sequence[str] = (), held: Sequence[str] = ()) -> None:
        self.log: list[str] = []
        self.users = MemoryUsers(*([PROFILE] if profile else []))
        self.schedules = MemorySchedules()
        self.generation_records = MemoryGenerationRecords()
        for day in dates:
            self.schedules.create(schedule_record("u1", day, OUTPUT))
            (record_id,) = self.record_ids("u1", [day])
            self.generation_records.leave(record_id, held=day in held)

    # ProfileEraser
    def mark_deleting(self, user_id: str, now: str) -> bool:
        self.log.append("mark")
        return self.users.mark_deleting(user_id, now)

    def delete_marked(self, user_id: str) -> bool:
        self.log.append("delete profile")
        return self.users.delete_marked(user_id)

    # ScheduleEraser
    def user_schedules(self, user_id: str) -> list[UserSchedule]:
        self.log.append("read schedules")
        return self.schedules.user_schedules(user_id)

    def existing_posts(self, post_ids: list[str]) -> list[str]:
        return self.schedules.existing_posts(post_ids)

    def delete_posts(self, post_ids: list[str]) -> int:
        self.log.append(f"delete {len(post_ids)} posts")
        return self.schedules.delete_posts(post_ids)

    def delete_schedules(self, user_id: str, local_dates: list[str]) -> int:
        self.log.append(f"delete {len(local_dates)} schedules")
        return self.schedules.delete_schedules(user_id, local_dates)

    # GenerationRecords
    def record_ids(self, user_id: str, local_dates: Sequence[str]) -> list[str]:
        return self.generation_records.record_ids(user_id, local_dates)

    def stored(self, record_ids: Sequence[str], now: datetime) -> list[GenerationRecord]:
        self.log.append("read records")
        return self.generation_records.stored(record_ids, now)

    def delete(self, record_ids: Sequence[str]) -> int:
        self.log.append(f"delete {len(record_ids)} records")
        return self.generation_records.delete(record_ids)


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
    everything = (store.users.items, store.schedules.records, store.schedules.posts, store.generation_records.held)
    assert everything == ({}, {}, {}, {})


def test_given_a_run_under_way_then_only_the_posts_go_and_the_rest_waits_for_a_repeat() -> None:
    store = Store(dates=["2026-03-09", "2026-03-10"], held=["2026-03-10"])

    with pytest.raises(GenerationInFlight) as busy:
        deletion(store).delete("u1")

    assert busy.value.posts_deleted == 6 and busy.value.retry_after_s > 0
    assert store.schedules.posts == {} and len(store.schedules.records) == 2 and len(store.generation_records.held) == 2
    assert "deletingAt" in store.users.items["u1"]  # marked: nothing readable, nothing more generated
    (running,) = store.record_ids("u1", ["2026-03-10"])
    store.generation_records.leave(running, held=False)  # the run ended and stored its outcome
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


def test_every_date_the_generator_would_take_now_is_among_the_dates_a_deletion_checks() -> None:
    reached = Branches()

    @given(
        now=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)),
        zone=st.sampled_from(ZONES),
    )
    def example(now: datetime, zone: str) -> None:
        today = now.astimezone(ZoneInfo(zone)).date()
        checked = set(dates_a_run_can_hold(now.date()))
        for offset in range(-4, 4):  # wider than the generator's window, so both branches are taken
            day = today + timedelta(days=offset)
            if not generator_takes(day, zone, now):
                reached.add("refused")
                continue
            reached.add("taken")
            assert day.isoformat() in checked, (zone, now, day)

    example()
    reached.assert_all("taken", "refused")


def test_the_dates_a_deletion_checks_are_a_short_window_around_utcs_today() -> None:
    assert dates_a_run_can_hold(date(2026, 3, 10)) == [f"2026-03-{day:02d}" for day in range(7, 13)]
