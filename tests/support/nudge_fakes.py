"""In-memory stand-ins for the nudge storage adapters, for unit tests that want no AWS:
``MemoryUsers`` for ``storage.users.DynamoUserRepository``, ``MemorySchedules`` for
``storage.nudges.DynamoScheduleRepository``, ``MemoryCohortMarks`` and ``MemoryCohortBatches`` for
``DynamoCohortMarks`` and ``DynamoCohortBatches``, ``MemoryGenerationRecords`` for
``storage.generation_records.DynamoGenerationRecords``.

Each keeps what its adapter keeps and answers as it does (items are shaped by the adapter's own
mapping functions), and ``tests/integration/nudges/test_nudge_store_contract.py`` runs the same
tests on both, so a unit test's fake cannot drift from the adapter it stands in for."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import date, datetime, timedelta
from typing import Any

from lambda_agents.nudges.cohort_batches import CohortBatch
from lambda_agents.nudges.deletion import GenerationRecord, UserSchedule
from lambda_agents.nudges.generation_records import KEY_PREFIX
from lambda_agents.nudges.profile import UserProfile
from lambda_agents.nudges.profiles import ProfileBeingDeleted
from lambda_agents.nudges.records import PostRecord, ProfileGone, ScheduleRecord
from lambda_agents.storage.dynamodb import ConditionFailed, from_dynamo, to_dynamo
from lambda_agents.storage.nudges import schedule_item
from lambda_agents.storage.users import profile_from_item

from devtools.cohort_marks import MemoryCohortMarks  # the fan-out simulation's too

__all__ = [
    "MemoryCohortBatches",
    "MemoryCohortMarks",
    "MemoryGenerationRecords",
    "MemorySchedules",
    "MemoryUsers",
    "schedule_record",
    "stored_schedule",
]
DELETING = "deletingAt"  # the mark a deletion sets first (``storage.users``)
ZONE_PROJECTION = ("userId", "timezone", "nudgesEnabled")  # what a TimezoneIndex page carries
TTL_DAYS = 30  # DynamoScheduleRepository's default


class MemoryUsers:
    """Profile items by user id. A profile marked for deletion is no profile to ``get``, ``update``
    and the zone listings, and ``save`` refuses it, as in the adapter."""

    def __init__(self, *profiles: UserProfile) -> None:
        self.items: dict[str, dict[str, Any]] = {}
        for profile in profiles:
            self.put(profile)

    def get(self, user_id: str) -> UserProfile | None:
        item = self.items.get(user_id)
        return None if item is None or DELETING in item else profile_from_item(item)

    def put(self, profile: UserProfile) -> None:
        self.items[profile.user_id] = profile.model_dump(by_alias=True, mode="json")

    def save(self, user_id: str, fields: dict[str, Any], now: str) -> bool:
        stored = self.items.get(user_id)
        if stored is not None and DELETING in stored:
            raise ProfileBeingDeleted(user_id)
        self.items[user_id] = {"userId": user_id, "createdAt": now, **(stored or {}), **fields, "updatedAt": now}
        return stored is None

    def update(self, user_id: str, fields: dict[str, Any], now: str) -> UserProfile | None:
        stored = self.items.get(user_id)
        if stored is None or DELETING in stored:
            return None
        stored.update({**fields, "updatedAt": now})
        return profile_from_item(stored)

    def mark_deleting(self, user_id: str, now: str) -> bool:
        stored = self.items.get(user_id)
        if stored is None:
            return False
        stored.setdefault(DELETING, now)
        stored.pop("timezone", None)  # out of TimezoneIndex
        return True

    def delete_marked(self, user_id: str) -> bool:
        if DELETING not in self.items.get(user_id, {}):
            return False
        del self.items[user_id]
        return True

    def count_in_timezone(self, timezone: str) -> int:
        return len(self._in_zone(timezone))

    def pages_in_timezone(self, timezone: str, page_size: int = 500) -> Iterator[list[dict[str, Any]]]:
        users = self._in_zone(timezone)
        for start in range(0, len(users), page_size):
            yield users[start : start + page_size]

    def _in_zone(self, timezone: str) -> list[dict[str, Any]]:
        """TimezoneIndex (sorted by user id) with nudges on, projected as the adapter projects it."""
        return [
            {name: item[name] for name in ZONE_PROJECTION if name in item}
            for _, item in sorted(self.items.items())
            if item.get("timezone") == timezone and item.get("nudgesEnabled") is not False
        ]


class MemorySchedules:
    """Schedules by (user, local date) and the posts they name. With ``owners`` (the adapter's
    ``owner_table``, as the generator builds it) a schedule is stored only for a present profile
    whose deletion has not begun; else ``ProfileGone``."""

    def __init__(self, owners: MemoryUsers | None = None) -> None:
        self.records: dict[tuple[str, str], ScheduleRecord] = {}
        self.posts: dict[str, PostRecord] = {}
        self.owners = owners

    def recent(self, user_id: str, local_date: str, days: int) -> list[dict[str, Any]]:
        """Schedules from ``local_date - days`` to ``local_date`` included, newest first."""
        last = date.fromisoformat(local_date)
        window = ((last - timedelta(days=offset)).isoformat() for offset in range(days + 1))
        return [item for item in (self.get(user_id, day) for day in window) if item is not None]

    def get(self, user_id: str, local_date: str) -> dict[str, Any] | None:
        record = self.records.get((user_id, local_date))
        return None if record is None else stored_schedule(record)

    def create(self, record: ScheduleRecord) -> bool:
        if self.owners is not None:
            owner = self.owners.items.get(record.user_id)
            if owner is None or DELETING in owner:
                raise ProfileGone(record.user_id)
        posts = record.posts()
        # One transaction in the adapter: a schedule or any of its posts already there refuses it all.
        if (record.user_id, record.local_date) in self.records or any(post.post_id in self.posts for post in posts):
            return False
        self.records[(record.user_id, record.local_date)] = record
        self.posts.update((post.post_id, post) for post in posts)
        return True

    def user_schedules(self, user_id: str) -> list[UserSchedule]:
        """Oldest first, as the adapter's Query on the user's partition reads them."""
        return [
            UserSchedule(local_date, record.agent_raw_output)
            for (owner, local_date), record in sorted(self.records.items())
            if owner == user_id
        ]

    def existing_posts(self, post_ids: list[str]) -> list[str]:
        return sorted(set(post_ids) & self.posts.keys())

    def delete_posts(self, post_ids: list[str]) -> int:
        for post_id in post_ids:
            self.posts.pop(post_id, None)
        return len(post_ids)

    def delete_schedules(self, user_id: str, local_dates: list[str]) -> int:
        for local_date in local_dates:
            self.records.pop((user_id, local_date), None)
        return len(local_dates)


def stored_schedule(record: ScheduleRecord) -> dict[str, Any]:
    """The item a read of ``record`` returns: the adapter's, without the attributes it leaves out
    (None) and with DynamoDB's numbers."""
    item = schedule_item(record, TTL_DAYS)
    return from_dynamo(to_dynamo({name: value for name, value in item.items() if value is not None}))


class MemoryCohortBatches:
    """Batch jobs by (zone, local date, part); a claim is part 0, written only once; a new part is
    written only if absent, a change only while the record is in the state the caller read."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str, int], CohortBatch] = {}

    def claim(self, batch: CohortBatch) -> bool:
        if (batch.zone, batch.local_date, 0) in self.items:
            return False
        self.items[(batch.zone, batch.local_date, 0)] = replace(batch, part=0)
        return True

    def save(self, batch: CohortBatch) -> None:
        key = (batch.zone, batch.local_date, batch.part)
        if key in self.items:
            raise ConditionFailed(f"the batch record {batch.label} exists already")
        self.items[key] = batch

    def change(self, batch: CohortBatch, was: str) -> bool:
        key = (batch.zone, batch.local_date, batch.part)
        if key not in self.items or self.items[key].state != was:
            return False
        self.items[key] = batch
        return True

    def open_batches(self, local_dates: Sequence[str]) -> list[CohortBatch]:
        """Date by date as asked, each date's in the adapter's sort key order (``<zone>#<part>``)."""
        return [
            batch
            for local_date in local_dates
            for batch in sorted(self.items.values(), key=lambda batch: f"{batch.zone}#{batch.part}")
            if batch.local_date == local_date and batch.state in ("submitted", "claimed")
        ]


class MemoryGenerationRecords:
    """Which generator records exist and whether a run under way still holds each. Ids are made
    from user and date as the adapter's are (not with Powertools' hash: a deletion only compares
    them)."""

    def __init__(self) -> None:
        self.held: dict[str, bool] = {}

    def record_ids(self, user_id: str, local_dates: Sequence[str]) -> list[str]:
        return sorted({f"{KEY_PREFIX}#{user_id}#{local_date}" for local_date in local_dates})

    def leave(self, record_id: str, *, held: bool) -> None:
        """What a generator run leaves: a record it holds while under way, then its outcome."""
        self.held[record_id] = held

    def stored(self, record_ids: Sequence[str], now: datetime) -> list[GenerationRecord]:
        """Sorted by id; ``held`` as left (the adapter works it out from Powertools' expiries and ``now``)."""
        return [
            GenerationRecord(record_id, self.held[record_id])
            for record_id in sorted(record_ids)
            if record_id in self.held
        ]

    def delete(self, record_ids: Sequence[str]) -> int:
        for record_id in record_ids:
            self.held.pop(record_id, None)
        return len(record_ids)


def schedule_record(
    user_id: str, local_date: str, output: dict[str, Any], *, fallback_used: bool = False
) -> ScheduleRecord:
    """A day's schedule as the generator writes it, with ``output`` as the agent's answer."""
    return ScheduleRecord(
        user_id=user_id,
        local_date=local_date,
        timezone="Asia/Tokyo",
        language="en",
        app_version="1.0.0",
        slot_table=[{"slotIndex": 0, "localTime": "07:00", "problems": ["anxiety"]}],
        agent_raw_output=output,
        fallback_used=fallback_used,
        fallback_reason="validation" if fallback_used else None,
        attempts=[{"attempt": 1, "finishReason": "stop"}],
        usage={"promptTokens": 100, "completionTokens": 50},
        model="scripted",
        created_at=f"{local_date}T05:00:00+00:00",
    )
