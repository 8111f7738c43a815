"""The day's nudges as the app shows them (``GET /nudges/schedule``), read from the stored schedule
(docs/nudges.md#the-day-schedule).

The app gets, per enabled app nudge: its slot, the local time and the instant it is due
(``scheduledAt``, in the time zone the day was generated for), the hook, the content and the tone.
Nothing else leaves: not the Commander's reasoning or strategy, not whether the fallback wrote the
day, not the TikTok / X posts (the posting jobs' business, never the user's), not the attempts,
tokens or model. A nudge the agent switched off (``enabled: false``) is not shown. A day stored by
another version is shown as well as it reads: what does not read is skipped and named, never a
500 for the rest of the day.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..timezones import zone
from ..validation_errors import summarise_errors
from .slots import parse_local_time


class StoredScheduleInvalid(ValueError):
    """A stored item that is not a schedule at all (not an object): nothing of it can be shown."""


class _Stored(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class _StoredSlot(_Stored):
    slot_index: int = Field(alias="slotIndex", ge=0)
    local_time: str = Field(alias="localTime")


class _StoredNudge(_Stored):
    slot_index: int = Field(alias="slotIndex", ge=0)
    hook: str
    content: str
    tone: str  # a tone an older or newer version wrote is shown as it is
    enabled: bool


@dataclass(frozen=True)
class AppNudge:
    slot_index: int
    local_time: str
    scheduled_at: str
    hook: str
    content: str
    tone: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "slotIndex": self.slot_index,
            "localTime": self.local_time,
            "scheduledAt": self.scheduled_at,
            "hook": self.hook,
            "content": self.content,
            "tone": self.tone,
        }


@dataclass(frozen=True)
class DaySchedule:
    local_date: str
    timezone: str
    language: str
    generated_at: str
    nudges: list[AppNudge]
    # What of the stored item could not be shown (for the log and the StoredNudgesSkipped metric).
    skipped: list[str] = field(default_factory=list)

    def as_response(self) -> dict[str, Any]:
        return {
            "date": self.local_date,
            "timezone": self.timezone,
            "language": self.language,
            "generatedAt": self.generated_at,
            "nudges": [nudge.as_dict() for nudge in self.nudges],
            "count": len(self.nudges),
        }


def day_schedule(item: Any, *, local_date: str | None = None, profile_zone: str | None = None) -> DaySchedule:
    """The app's view of one stored schedule, shown as well as it reads.

    An item written by another version (a tone outside today's list, a slot or nudge missing a
    field, a time that does not parse) loses only what does not read: each such part is skipped
    and named in ``skipped``. A stored zone that no longer parses is replaced by the profile's
    (``profile_zone``), a stored date by the one asked for (``local_date``, the item's key); only
    an item that is not an object at all raises StoredScheduleInvalid.
    """
    if not isinstance(item, dict):
        raise StoredScheduleInvalid(f"stored schedule is a {type(item).__name__}, not an object")
    skipped: list[str] = []
    day = _date(item.get("localDate"), local_date, skipped)
    zone_name, zone = _zone(item.get("timezone"), profile_zone, skipped)
    times = _slot_times(item.get("slotTable"), skipped)
    output = item.get("agentRawOutput")
    raw_nudges = output.get("appNudges") if isinstance(output, dict) else None
    if not isinstance(raw_nudges, list):
        skipped.append("agentRawOutput.appNudges is not a list")
        raw_nudges = []
    nudges = []
    for index, raw in enumerate(raw_nudges):
        try:
            nudge = _StoredNudge.model_validate(raw)
        except ValidationError as error:
            skipped.append(f"appNudges[{index}]: {summarise_errors(error)}")
            continue
        if not nudge.enabled:
            continue
        local_time = times.get(nudge.slot_index)
        if local_time is None or day is None or zone is None:
            skipped.append(f"appNudges[{index}]: no time for slot {nudge.slot_index}")
            continue
        minutes = parse_local_time(local_time)
        due = datetime.combine(day, time(minutes // 60, minutes % 60), tzinfo=zone)
        nudges.append(AppNudge(nudge.slot_index, local_time, due.isoformat(), nudge.hook, nudge.content, nudge.tone))
    nudges.sort(key=lambda shown: shown.slot_index)
    return DaySchedule(
        day.isoformat() if day is not None else str(local_date or ""),
        zone_name,
        _text(item.get("language"), "en"),
        _text(item.get("createdAt"), ""),
        nudges,
        skipped,
    )


def _date(stored: Any, asked: str | None, skipped: list[str]) -> date | None:
    for candidate in (stored, asked):
        if candidate is None:
            continue
        try:
            return date.fromisoformat(str(candidate))
        except ValueError:
            skipped.append(f"localDate {str(candidate)[:40]!r} is not a date")
    return None


def _zone(stored: Any, profile_zone: str | None, skipped: list[str]) -> tuple[str, ZoneInfo | None]:
    for candidate in (stored, profile_zone):
        if not isinstance(candidate, str):
            continue
        try:
            return candidate, zone(candidate)
        except (KeyError, ValueError):
            skipped.append(f"timezone {candidate[:60]!r} is not a known zone")
    return str(stored or ""), None


def _slot_times(stored: Any, skipped: list[str]) -> dict[int, str]:
    times: dict[int, str] = {}
    for index, raw in enumerate(stored if isinstance(stored, list) else []):
        try:
            slot = _StoredSlot.model_validate(raw)
            parse_local_time(slot.local_time)
        except (ValidationError, ValueError) as error:
            reason = summarise_errors(error) if isinstance(error, ValidationError) else str(error)
            skipped.append(f"slotTable[{index}]: {reason}")
            continue
        times[slot.slot_index] = slot.local_time
    return times


def _text(value: Any, default: str) -> str:
    return value if isinstance(value, str) else default
