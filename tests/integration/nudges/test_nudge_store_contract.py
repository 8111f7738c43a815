"""Contract: the in-memory nudge stores the unit tests use (``tests.support.nudge_fakes``) behave as
the DynamoDB adapters do on moto, in what the nudge services rely on (``lambda_agents.nudges``):

- profiles (``DynamoUserRepository``): a missing or marked profile reads as none; a save says
  whether it created the profile; an update needs an existing one; a marked profile refuses a save
  and leaves the zone listings; only a marked profile is deleted; zones list users with nudges on;
- schedules (``DynamoScheduleRepository``, built as the generator builds it): one per user and
  day, stored only for a present, unmarked profile; the recent window; what a deletion reads and
  what it removes;
- cohort marks and batch jobs (``DynamoCohortMarks``, ``DynamoCohortBatches``): queued once,
  claimed once, open while submitted;
- generator records (``DynamoGenerationRecords``): ids per user and date, read only when they
  exist, each saying whether a run still holds it.

Every test runs against both."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from lambda_agents.nudges.cohort_batches import CohortBatch
from lambda_agents.nudges.deletion import GenerationRecord, UserSchedule
from lambda_agents.nudges.profile import UserProfile
from lambda_agents.nudges.profiles import ProfileBeingDeleted
from lambda_agents.nudges.records import ProfileGone, post_records
from lambda_agents.storage.dynamodb import ConditionFailed, table
from lambda_agents.storage.generation_records import DynamoGenerationRecords
from lambda_agents.storage.nudges import DynamoCohortBatches, DynamoCohortMarks, DynamoScheduleRepository
from lambda_agents.storage.users import DynamoUserRepository

from tests.support.nudge_fakes import (
    MemoryCohortBatches,
    MemoryCohortMarks,
    MemoryGenerationRecords,
    MemorySchedules,
    MemoryUsers,
    schedule_record,
)

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class NudgeStores:
    """One implementation of every nudge port that has a fake, and how a generator run leaves its
    record there (Powertools writes it in production: neither port does)."""

    users: MemoryUsers | DynamoUserRepository
    schedules: MemorySchedules | DynamoScheduleRepository  # the generator's: writes checked against ``users``
    marks: MemoryCohortMarks | DynamoCohortMarks
    batches: MemoryCohortBatches | DynamoCohortBatches
    records: MemoryGenerationRecords | DynamoGenerationRecords
    leave_record: Callable[..., None]


def leave_powertools_record(record_id: str, *, held: bool) -> None:
    """A record as Powertools leaves it: in progress until the run's deadline, then its outcome."""
    now = time.time()
    item: dict[str, Any] = {"id": record_id, "status": "INPROGRESS" if held else "COMPLETED"}
    item["expiration"] = int(now) + 3600
    if held:
        item["in_progress_expiration"] = int(now * 1000) + 60_000
    table("NudgeIdempotencyTable").put_item(Item=item)


@pytest.fixture(params=["memory", "dynamodb"])
def stores(request: pytest.FixtureRequest) -> NudgeStores:
    if request.param == "memory":
        users, records = MemoryUsers(), MemoryGenerationRecords()
        schedules = MemorySchedules(owners=users)
        return NudgeStores(users, schedules, MemoryCohortMarks(), MemoryCohortBatches(), records, records.leave)
    request.getfixturevalue("aws")  # moto, with the template's UsersTable, SchedulesTable and NudgeIdempotencyTable
    return NudgeStores(
        DynamoUserRepository("UsersTable"),
        DynamoScheduleRepository("SchedulesTable", owner_table="UsersTable"),
        DynamoCohortMarks("SchedulesTable"),
        DynamoCohortBatches("SchedulesTable"),
        DynamoGenerationRecords("NudgeIdempotencyTable"),
        leave_powertools_record,
    )


NOW, LATER = "2026-02-01T20:00:00.000+00:00", "2026-02-01T21:00:00.000+00:00"
FIELDS = {"problems": ["anxiety"], "preferredLanguage": "en", "timezone": "Asia/Tokyo", "nudgesEnabled": True}
DAY = "2026-02-02"
OUTPUT = {
    "appNudges": [{"slotIndex": 0, "hook": "h", "content": "c", "tone": "gentle", "enabled": True}],
    "tiktokPosts": [{"slot": "morning", "caption": "a", "enabled": True}, {"slot": "evening", "caption": "b"}],
    "xPosts": [{"slot": "morning", "text": "c", "enabled": False}],
}


def profile(user_id: str, **fields: Any) -> UserProfile:
    return UserProfile.model_validate({"userId": user_id, **FIELDS, **fields})


def day(offset: int) -> str:
    return (date.fromisoformat(DAY) + timedelta(days=offset)).isoformat()


def post_ids(user_id: str, *local_dates: str) -> list[str]:
    return sorted(post.post_id for d in local_dates for post in post_records(user_id, d, OUTPUT))


# -- profiles ------------------------------------------------------------------------------------


def test_a_profile_reads_back_whole_and_a_missing_one_reads_as_none(stores: NudgeStores) -> None:
    stores.users.put(profile("u1", problems=["anxiety", "procrastination"], appVersion="2.1.0"))

    assert stores.users.get("u1") == profile("u1", problems=["anxiety", "procrastination"], appVersion="2.1.0")
    assert stores.users.get("nobody") is None


def test_a_save_says_whether_it_created_the_profile_and_keeps_what_it_does_not_name(stores: NudgeStores) -> None:
    assert stores.users.save("u1", FIELDS, NOW) is True
    assert stores.users.save("u1", {"problems": ["procrastination"], "preferredLanguage": "ja"}, LATER) is False

    assert stores.users.get("u1") == profile("u1", problems=["procrastination"], preferredLanguage="ja")


def test_an_update_changes_only_the_named_fields_and_only_of_an_existing_profile(stores: NudgeStores) -> None:
    assert stores.users.update("u1", {"nudgesEnabled": False}, NOW) is None
    assert stores.users.get("u1") is None  # an update creates nothing
    stores.users.save("u1", FIELDS, NOW)

    updated = stores.users.update("u1", {"nudgesEnabled": False, "timezone": "Europe/Paris"}, LATER)

    assert updated == profile("u1", nudgesEnabled=False, timezone="Europe/Paris") == stores.users.get("u1")


def test_a_profile_marked_for_deletion_is_no_profile_to_any_reader_or_writer(stores: NudgeStores) -> None:
    stores.users.save("u1", FIELDS, NOW)

    assert stores.users.mark_deleting("u1", LATER) is True
    assert stores.users.mark_deleting("u1", LATER) is True  # again, when a deletion was cut short
    assert stores.users.get("u1") is None
    assert stores.users.update("u1", {"nudgesEnabled": False}, LATER) is None
    with pytest.raises(ProfileBeingDeleted):
        stores.users.save("u1", FIELDS, LATER)
    assert stores.users.count_in_timezone("Asia/Tokyo") == 0
    assert list(stores.users.pages_in_timezone("Asia/Tokyo")) == []
    assert stores.users.mark_deleting("nobody", LATER) is False


def test_only_a_marked_profile_is_deleted_and_only_once(stores: NudgeStores) -> None:
    stores.users.save("u1", FIELDS, NOW)

    assert stores.users.delete_marked("u1") is False
    assert stores.users.get("u1") == profile("u1")  # not marked: kept
    stores.users.mark_deleting("u1", LATER)
    assert stores.users.delete_marked("u1") is True
    assert stores.users.delete_marked("u1") is False
    assert stores.users.mark_deleting("u1", LATER) is False  # gone: nothing left to mark
    assert stores.users.save("u1", FIELDS, LATER) is True  # a new start


def test_a_zone_lists_its_users_with_nudges_on_in_pages_by_user_id(stores: NudgeStores) -> None:
    for user in (profile("u3"), profile("u1"), profile("u2", nudgesEnabled=False), profile("u5"), profile("u4")):
        stores.users.put(user)
    stores.users.put(profile("paris", timezone="Europe/Paris"))

    pages = list(stores.users.pages_in_timezone("Asia/Tokyo", page_size=2))

    assert all(1 <= len(page) <= 2 for page in pages)
    on = {"timezone": "Asia/Tokyo", "nudgesEnabled": True}
    assert [item for page in pages for item in page] == [{"userId": u, **on} for u in ("u1", "u3", "u4", "u5")]
    assert stores.users.count_in_timezone("Asia/Tokyo") == 4
    assert stores.users.count_in_timezone("Europe/Paris") == 1
    assert list(stores.users.pages_in_timezone("America/Lima")) == []
    assert stores.users.count_in_timezone("America/Lima") == 0


# -- schedules -----------------------------------------------------------------------------------


def test_a_day_is_stored_once_per_user_and_a_second_write_changes_nothing(stores: NudgeStores) -> None:
    stores.users.put(profile("u1"))
    stores.users.put(profile("u2"))

    assert stores.schedules.create(schedule_record("u1", DAY, OUTPUT)) is True
    assert stores.schedules.create(schedule_record("u1", DAY, {"appNudges": []}, fallback_used=True)) is False

    stored = stores.schedules.get("u1", DAY)
    assert stored is not None and (stored["agentRawOutput"], stored["fallbackUsed"]) == (OUTPUT, False)
    assert stores.schedules.create(schedule_record("u2", DAY, OUTPUT)) is True


def test_a_read_gives_the_fields_the_services_use_and_none_for_a_missing_day(stores: NudgeStores) -> None:
    stores.users.put(profile("u1"))
    record = schedule_record("u1", DAY, OUTPUT, fallback_used=True)
    stores.schedules.create(record)

    stored = stores.schedules.get("u1", DAY)

    assert stored is not None
    assert {name: stored.get(name) for name in ("localDate", "timezone", "language", "createdAt")} == {
        "localDate": DAY,
        "timezone": record.timezone,
        "language": record.language,
        "createdAt": record.created_at,
    }
    assert (stored["slotTable"], stored["agentRawOutput"]) == (record.slot_table, OUTPUT)
    assert (stored["fallbackUsed"], stored["fallbackReason"]) == (True, record.fallback_reason)
    assert stores.schedules.get("u1", day(1)) is None
    assert stores.schedules.get("u2", DAY) is None


def test_the_recent_days_are_those_of_the_window_newest_first_and_only_the_users(stores: NudgeStores) -> None:
    stores.users.put(profile("u1"))
    stores.users.put(profile("u2"))
    for user, offset in (("u1", -5), ("u1", -2), ("u1", 0), ("u1", 1), ("u2", -1)):
        stores.schedules.create(schedule_record(user, day(offset), OUTPUT, fallback_used=offset == -2))

    recent = stores.schedules.recent("u1", day(0), 2)

    assert [(item["localDate"], item["fallbackUsed"]) for item in recent] == [(day(0), False), (day(-2), True)]
    assert all(item["agentRawOutput"] == OUTPUT for item in recent)
    assert [item["localDate"] for item in stores.schedules.recent("u1", day(-1), 2)] == [day(-2)]  # not day(-5)
    assert stores.schedules.recent("nobody", day(0), 2) == []


def test_a_day_is_stored_only_for_a_present_profile_whose_deletion_has_not_begun(stores: NudgeStores) -> None:
    with pytest.raises(ProfileGone):
        stores.schedules.create(schedule_record("nobody", DAY, OUTPUT))
    stores.users.put(profile("u1"))
    stores.users.mark_deleting("u1", NOW)

    with pytest.raises(ProfileGone):
        stores.schedules.create(schedule_record("u1", DAY, OUTPUT))

    assert stores.schedules.get("nobody", DAY) is None and stores.schedules.get("u1", DAY) is None
    assert stores.schedules.existing_posts(post_ids("nobody", DAY) + post_ids("u1", DAY)) == []


def test_a_users_schedules_come_oldest_first_and_name_the_posts_that_exist(stores: NudgeStores) -> None:
    stores.users.put(profile("u1"))
    stores.users.put(profile("u2"))
    for user, local_date in (("u1", day(1)), ("u1", day(0)), ("u2", day(0))):
        stores.schedules.create(schedule_record(user, local_date, OUTPUT))

    assert stores.schedules.user_schedules("u1") == [UserSchedule(day(0), OUTPUT), UserSchedule(day(1), OUTPUT)]
    assert stores.schedules.user_schedules("nobody") == []
    asked = post_ids("u1", day(0), day(1), day(2))
    assert stores.schedules.existing_posts(asked) == post_ids("u1", day(0), day(1))
    assert stores.schedules.existing_posts([]) == []


def test_a_deletion_removes_only_what_it_names_and_a_missing_key_is_no_error(stores: NudgeStores) -> None:
    stores.users.put(profile("u1"))
    stores.users.put(profile("u2"))
    for user, local_date in (("u1", day(0)), ("u1", day(1)), ("u2", day(0))):
        stores.schedules.create(schedule_record(user, local_date, OUTPUT))

    assert stores.schedules.delete_posts([*post_ids("u1", day(0)), "tiktok#missing"]) == 4
    assert stores.schedules.existing_posts(post_ids("u1", day(0), day(1))) == post_ids("u1", day(1))
    assert len(stores.schedules.user_schedules("u1")) == 2  # the posts went, their schedules stay
    assert stores.schedules.delete_schedules("u1", [day(0), day(-9)]) == 2

    assert stores.schedules.user_schedules("u1") == [UserSchedule(day(1), OUTPUT)]
    assert stores.schedules.get("u1", day(0)) is None
    assert stores.schedules.get("u2", day(0)) is not None
    assert stores.schedules.existing_posts(post_ids("u2", day(0))) == post_ids("u2", day(0))
    assert stores.schedules.create(schedule_record("u1", day(0), OUTPUT)) is True  # the day can be made again


# -- cohort marks and batch jobs -----------------------------------------------------------------


def test_a_cohort_is_queued_once_it_is_marked_and_no_other_is(stores: NudgeStores) -> None:
    assert stores.marks.queued("Asia/Tokyo", DAY) is False

    stores.marks.mark("Asia/Tokyo", DAY)
    stores.marks.mark("Asia/Tokyo", DAY)

    assert stores.marks.queued("Asia/Tokyo", DAY) is True
    assert stores.marks.queued("Asia/Tokyo", day(1)) is False
    assert stores.marks.queued("Europe/Paris", DAY) is False


def claim(zone: str, local_date: str, cutoff: str, tag: str = "tag-0") -> CohortBatch:
    return CohortBatch(zone, local_date, 0, cutoff, claim=tag, claimed_at=NOW)


def test_a_cohort_is_claimed_once_whatever_the_cutoff(stores: NudgeStores) -> None:
    assert stores.batches.claim(claim("Asia/Tokyo", DAY, NOW)) is True
    assert stores.batches.claim(claim("Asia/Tokyo", DAY, LATER, "tag-1")) is False
    assert stores.batches.claim(claim("Asia/Tokyo", day(1), NOW)) is True
    assert stores.batches.claim(claim("Europe/Paris", DAY, NOW)) is True
    assert stores.batches.open_batches([DAY])[0] == claim("Asia/Tokyo", DAY, NOW)  # the first claim's tag kept


def test_the_open_batches_are_the_unsettled_jobs_of_the_dates_asked_read_back_whole(stores: NudgeStores) -> None:
    stores.batches.claim(claim("Asia/Tokyo", DAY, NOW))
    # claimed, no job confirmed: open, so that a job whose create answer was lost is looked up
    assert stores.batches.open_batches([DAY]) == [claim("Asia/Tokyo", DAY, NOW)]
    first = replace(claim("Asia/Tokyo", DAY, NOW), batch_id="batch-0", requests=2, state="submitted")
    second = replace(first, part=1, batch_id="batch-1", requests=1)
    paris = CohortBatch("Europe/Paris", day(1), 0, LATER, batch_id="batch-2", requests=5, state="submitted")
    lost = replace(claim("Asia/Tokyo", DAY, NOW), part=2, requests=3)
    assert stores.batches.change(first, was="claimed") is True
    for batch in (second, paris, lost, CohortBatch("America/Lima", DAY, 0, NOW, state="empty")):
        stores.batches.save(batch)

    assert stores.batches.open_batches([DAY]) == [first, second, lost]
    assert stores.batches.open_batches([day(1), DAY]) == [paris, first, second, lost]
    assert stores.batches.change(replace(first, state="collected"), was="submitted") is True
    assert stores.batches.change(replace(lost, state="refused"), was="claimed") is True
    assert stores.batches.open_batches([DAY]) == [second]
    assert stores.batches.open_batches([]) == []


def test_the_model_of_the_chain_a_part_is_at_is_read_back_with_it(stores: NudgeStores) -> None:
    stores.batches.claim(claim("Asia/Tokyo", DAY, NOW))
    at_second = replace(claim("Asia/Tokyo", DAY, NOW), model="gpt-4o-mini")
    stores.batches.change(at_second, was="claimed")
    assert stores.batches.open_batches([DAY]) == [at_second]
    submitted = replace(at_second, batch_id="batch-0", state="submitted")
    stores.batches.change(submitted, was="claimed")
    assert stores.batches.open_batches([DAY]) == [submitted]


def test_a_parts_range_of_request_keys_and_its_request_ids_are_read_back_with_it(stores: NudgeStores) -> None:
    part = replace(claim("Asia/Tokyo", DAY, NOW), part=1, keys_from="3f", keys_below="", signed_ids=True)
    stores.batches.save(part)

    assert stores.batches.open_batches([DAY]) == [part]


def test_a_record_changes_only_from_the_state_its_run_read_so_two_runs_never_both_move_it(
    stores: NudgeStores,
) -> None:
    stores.batches.claim(claim("Asia/Tokyo", DAY, NOW))
    submitted = replace(claim("Asia/Tokyo", DAY, NOW), batch_id="batch-0", state="submitted")
    assert stores.batches.change(submitted, was="claimed") is True
    assert stores.batches.change(replace(submitted, batch_id="batch-9"), was="claimed") is False  # lost the race
    collected = replace(submitted, state="collected")
    assert stores.batches.change(collected, was="submitted") is True
    assert stores.batches.change(collected, was="submitted") is False  # collected once
    assert stores.batches.change(submitted, was="claimed") is False  # never reopened
    assert stores.batches.open_batches([DAY]) == []
    # nothing to change where nothing was claimed
    assert stores.batches.change(claim("Europe/Paris", DAY, NOW), was="claimed") is False
    assert stores.batches.open_batches([DAY]) == []


def test_a_new_part_is_written_once(stores: NudgeStores) -> None:
    part = replace(claim("Asia/Tokyo", DAY, NOW), part=1)
    stores.batches.save(part)

    with pytest.raises(ConditionFailed):
        stores.batches.save(replace(part, requests=9))
    assert stores.batches.open_batches([DAY]) == [part]


# -- generator records ---------------------------------------------------------------------------


def test_record_ids_are_one_per_user_and_date_and_the_same_every_time(stores: NudgeStores) -> None:
    ids = stores.records.record_ids("u1", [day(0), day(1)])

    assert len(set(ids)) == 2 and ids == sorted(ids)
    assert stores.records.record_ids("u1", [day(1), day(0), day(1)]) == ids
    assert set(stores.records.record_ids("u1", [day(0)])) < set(ids)
    assert not set(stores.records.record_ids("u2", [day(0), day(1)])) & set(ids)


def test_only_stored_records_are_read_each_saying_whether_a_run_holds_it_and_deleted_ones_are_gone(
    stores: NudgeStores,
) -> None:
    held, done, never = stores.records.record_ids("u1", [day(-1)]) + stores.records.record_ids("u1", [day(0), day(1)])
    stores.leave_record(held, held=True)
    stores.leave_record(done, held=False)
    now = datetime.now(UTC)

    found = stores.records.stored([held, done, never], now)

    assert found == sorted([GenerationRecord(held, True), GenerationRecord(done, False)], key=lambda r: r.record_id)
    assert stores.records.delete([held, done, never]) == 3
    assert stores.records.stored([held, done, never], now) == []
