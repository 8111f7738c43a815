"""Deleting a user's nudge data (``DELETE /nudges/profile``): everything the profile API, the
generator and the posting jobs wrote for the user, everywhere it was written.

- the profile (UsersTable), and with it the user's place in TimezoneIndex: the scheduler stops
  queuing them;
- every schedule (SchedulesTable, the user's partition) and every TikTok / X post of them, pending
  or not, so no posting job is handed one of the user's posts (PendingPostsIndex entries go with
  the posts);
- the generator's idempotency records (NudgeIdempotencyTable), which hold the user's id.

Order, so that a deletion cut short anywhere is finished by the next DELETE, and a generation under
way for the user cannot undo it:

1. The profile is marked (``deletingAt``) and leaves TimezoneIndex. From then on readers see no
   profile and no schedule, a PUT is refused, and the generator's schedule write, which is
   conditioned on an unmarked profile, stores nothing.
2. The schedules are read (one consistent Query) and the posts they name are deleted first, so that
   no pending post of the user is handed out even if the rest fails.
3. The generator's records are read by id (see below). A record still held by a run under way means
   that run may have stored its schedule before step 1 and will write its record's outcome after
   this request read it: the deletion stops there (``GenerationInFlight``, 409 with Retry-After),
   leaving the marked profile and the schedules as the map of what is left, and a repeated DELETE
   finishes once the run has ended. A run that started after step 1 stores nothing and keeps no
   record.
4. The records, then the schedules, then the profile item are deleted.

Record ids are computed, not stored: the generator keys a record by user and local date
(``nudges.generation_records``), so its id is known for every date a schedule exists for, and for
the dates a run under way can be working on (the generator only takes a date within two days
before and one day after the user's today, which is within a day of UTC's today), even after a
schedule is gone. An id stored with the schedule would be lost with it, and a run in flight has no
schedule to store it in.

A user with nothing stored (never had a profile, or deleted it already) gets ``NothingToDelete``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, Protocol

from ..clock import utc_now
from ..errors import DomainError
from .local_dates import LOCAL_DATE_DAYS_AFTER, LOCAL_DATE_DAYS_BEFORE
from .records import post_records

# A local today is within a day of UTC's (zones run from UTC-12 to UTC+14).
ZONE_SPREAD_DAYS = 1
RETRY_AFTER_S = 5


class NothingToDelete(DomainError):
    """The user has no nudge data: no profile, no schedule, no record."""

    status = 404
    code = "PROFILE_NOT_FOUND"

    def __init__(self, user_id: str) -> None:
        super().__init__("no nudge profile or nudge data to delete")
        self.user_id = user_id


class GenerationInFlight(DomainError):
    """A generation for the user is under way; the deletion has begun and a repeat finishes it."""

    status = 409
    code = "GENERATION_IN_PROGRESS"
    always_retry_after_s = RETRY_AFTER_S

    def __init__(self, posts_deleted: int) -> None:
        super().__init__(
            "your nudges are being generated right now; the deletion has begun (nothing more is generated or "
            "posted) and sending the same DELETE again finishes it"
        )
        self.posts_deleted = posts_deleted
        self.retry_after_s = RETRY_AFTER_S


@dataclass(frozen=True)
class GenerationRecord:
    record_id: str
    held: bool  # an INPROGRESS record of a run that has not ended


@dataclass(frozen=True)
class UserSchedule:
    local_date: str
    agent_raw_output: Any


class ProfileEraser(Protocol):
    def mark_deleting(self, user_id: str, now: str) -> bool:
        """Mark the profile (again, after a deletion cut short); False when there is none."""
        ...

    def delete_marked(self, user_id: str) -> bool: ...


class ScheduleEraser(Protocol):
    def user_schedules(self, user_id: str) -> Sequence[UserSchedule]: ...

    def existing_posts(self, post_ids: list[str]) -> list[str]: ...

    def delete_posts(self, post_ids: list[str]) -> int: ...

    def delete_schedules(self, user_id: str, local_dates: list[str]) -> int: ...


class GenerationRecords(Protocol):
    def record_ids(self, user_id: str, local_dates: Sequence[str]) -> list[str]: ...

    def stored(self, record_ids: Sequence[str], now: datetime) -> list[GenerationRecord]: ...

    def delete(self, record_ids: Sequence[str]) -> int: ...


@dataclass(frozen=True)
class NudgeDataDeleted:
    profiles: int
    schedules: int
    posts: int
    generation_records: int

    def as_response(self) -> dict[str, Any]:
        return {
            "deleted": {
                "profiles": self.profiles,
                "schedules": self.schedules,
                "posts": self.posts,
                "generationRecords": self.generation_records,
            }
        }


def dates_a_run_can_hold(today_utc: date) -> list[str]:
    """Every local date a generation running now can be for, whatever the user's zone."""
    first = today_utc - timedelta(days=LOCAL_DATE_DAYS_BEFORE + ZONE_SPREAD_DAYS)
    days = LOCAL_DATE_DAYS_BEFORE + LOCAL_DATE_DAYS_AFTER + 2 * ZONE_SPREAD_DAYS
    return [(first + timedelta(days=offset)).isoformat() for offset in range(days + 1)]


@dataclass
class NudgeDataDeletion:
    profiles: ProfileEraser
    schedules: ScheduleEraser
    records: GenerationRecords
    clock: Callable[[], datetime] = utc_now

    def delete(self, user_id: str) -> NudgeDataDeleted:
        now = self.clock().astimezone(UTC)
        had_profile = self.profiles.mark_deleting(user_id, now.isoformat(timespec="milliseconds"))
        schedules = list(self.schedules.user_schedules(user_id))
        schedule_dates = sorted({schedule.local_date for schedule in schedules})
        candidates = sorted({*schedule_dates, *dates_a_run_can_hold(now.date())})
        records = self.records.stored(self.records.record_ids(user_id, candidates), now)
        post_ids = sorted(
            {
                post.post_id
                for schedule in schedules
                for post in post_records(user_id, schedule.local_date, schedule.agent_raw_output)
            }
        )
        posts = self.schedules.existing_posts(post_ids)
        self.schedules.delete_posts(posts)
        if any(record.held for record in records):
            raise GenerationInFlight(len(posts))
        self.records.delete([record.record_id for record in records])
        self.schedules.delete_schedules(user_id, schedule_dates)
        profile_deleted = had_profile and self.profiles.delete_marked(user_id)
        if not (had_profile or schedules or records or posts):
            raise NothingToDelete(user_id)
        return NudgeDataDeleted(int(profile_deleted), len(schedule_dates), len(posts), len(records))
