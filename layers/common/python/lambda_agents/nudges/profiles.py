"""The user's own side of nudges: their profile (what the generator reads) and their day's schedule
(what it wrote), for the app. Every call is about the caller only: the user id is the token's
subject, so there is no id to probe and no one else's data to reach.

The profile's problems must be keys of the schedule map the generator uses (``NUDGE_SCHEDULE_MAP``,
or the built-in map): a problem it does not know gives no slot, which a user would only notice as
missing nudges. Which day ``GET /nudges/schedule`` shows without a date is the user's today in
their profile's zone; the schedule itself is shown in the zone it was generated for. A schedule is
shown only while its user has a profile: once a deletion of the user's nudge data has begun
(``nudges.deletion``), none of it is read back, even if the deletion was cut short.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from ..clock import utc_now
from ..errors import DomainError
from .day_schedule import DaySchedule, day_schedule
from .profile import UserProfile
from .profile_requests import ProfilePatch, ProfileRequest


class ProfileNotFound(DomainError):
    """The caller has no nudge profile yet (``PUT /nudges/profile`` creates it)."""

    status = 404
    code = "PROFILE_NOT_FOUND"

    def __init__(self, user_id: str) -> None:
        super().__init__("no nudge profile yet; PUT /nudges/profile creates it")
        self.user_id = user_id


class ProfileBeingDeleted(DomainError):
    """A deletion of the caller's nudge data has begun and not finished: a new profile would
    outlive it. Repeating ``DELETE /nudges/profile`` finishes it; then a PUT creates a new one."""

    status = 409
    code = "PROFILE_BEING_DELETED"

    def __init__(self, user_id: str) -> None:
        super().__init__(
            "a deletion of your nudge data has not finished: DELETE /nudges/profile finishes it, then PUT creates "
            "a new profile"
        )
        self.user_id = user_id


class ScheduleNotFound(DomainError):
    """No nudges were generated for that local date (not yet, or too long ago: schedules expire)."""

    status = 404
    code = "SCHEDULE_NOT_FOUND"

    def __init__(self, local_date: str) -> None:
        super().__init__(f"no nudges were generated for {local_date}")
        self.local_date = local_date


class UnknownProblems(DomainError, ValueError):
    """Problems the schedule map does not know; ``unknown`` holds their positions in the request
    and names, and the answer names each as a field of the body."""

    code = "VALIDATION_ERROR"

    def __init__(self, unknown: Sequence[tuple[int, str]], known: Sequence[str]) -> None:
        names = ", ".join(repr(name) for _, name in unknown)
        details = [
            {"field": f"body.problems.{index}", "message": f"unknown problem {name!r}"} for index, name in unknown
        ]
        super().__init__(f"unknown problem(s) {names}; known: {', '.join(known)}", details=details)
        self.unknown = list(unknown)
        self.known = list(known)


class ProfileStore(Protocol):
    def get(self, user_id: str) -> UserProfile | None: ...

    def save(self, user_id: str, fields: dict[str, Any], now: str) -> bool:
        """Create or replace; True when created; ProfileBeingDeleted during a deletion."""
        ...

    def update(self, user_id: str, fields: dict[str, Any], now: str) -> UserProfile | None:
        """Change an existing profile's fields; None when there is none."""
        ...


class ScheduleReader(Protocol):
    def get(self, user_id: str, local_date: str) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class SavedProfile:
    profile: UserProfile
    created: bool


@dataclass
class NudgeProfileService:
    profiles: ProfileStore
    schedules: ScheduleReader
    schedule_map: Mapping[str, Sequence[str]]
    clock: Callable[[], datetime] = utc_now

    def get(self, user_id: str) -> UserProfile:
        profile = self.profiles.get(user_id)
        if profile is None:
            raise ProfileNotFound(user_id)
        return profile

    def save(self, user_id: str, request: ProfileRequest) -> SavedProfile:
        self._check_problems(request.problems)
        fields = request.fields()
        profile = UserProfile.model_validate({"userId": user_id, **fields})  # what the generator will read
        created = self.profiles.save(user_id, fields, self._now())
        return SavedProfile(profile, created)

    def update(self, user_id: str, patch: ProfilePatch) -> UserProfile:
        if patch.problems is not None:
            self._check_problems(patch.problems)
        profile = self.profiles.update(user_id, patch.fields(), self._now())
        if profile is None:
            raise ProfileNotFound(user_id)
        return profile

    def day(self, user_id: str, local_date: str | None) -> DaySchedule:
        """The day's schedule; without a date, the user's today in their profile's zone."""
        profile = self.profiles.get(user_id)
        if local_date is None:
            if profile is None:
                raise ProfileNotFound(user_id)
            local_date = self.clock().astimezone(profile.zone()).date().isoformat()
        item = self.schedules.get(user_id, local_date)
        if item is None or profile is None:
            raise ScheduleNotFound(local_date)
        return day_schedule(item, local_date=local_date, profile_zone=profile.timezone)

    def _check_problems(self, problems: Sequence[str]) -> None:
        unknown = [(index, name) for index, name in enumerate(problems) if name not in self.schedule_map]
        if unknown:
            raise UnknownProblems(unknown, sorted(self.schedule_map))

    def _now(self) -> str:
        return self.clock().astimezone(UTC).isoformat(timespec="milliseconds")
