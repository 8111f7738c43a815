"""The day's nudges as the app shows them (``GET /nudges/schedule``), read from the stored schedule
(spec 000 notification_schedules).

The app gets, per enabled app nudge: its slot, the local time and the instant it is due
(``scheduledAt``, in the time zone the day was generated for), the hook, the content and the tone.
Nothing else leaves: not the Commander's reasoning or strategy, not whether the fallback wrote the
day, not the TikTok / X posts (the posting jobs' business, never the user's), not the attempts,
tokens or model. A nudge the agent switched off (``enabled: false``) is not shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any, Literal
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..validation_errors import summarise_errors
from .slots import parse_local_time

Tone = Literal["strict", "gentle", "empathetic", "analytical", "playful"]


class StoredScheduleInvalid(ValueError):
    """A stored schedule that does not read as one (a bug or a hand edit): never shown half."""


class _Stored(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class _StoredSlot(_Stored):
    slot_index: int = Field(alias="slotIndex", ge=0)
    local_time: str = Field(alias="localTime")


class _StoredNudge(_Stored):
    slot_index: int = Field(alias="slotIndex", ge=0)
    hook: str
    content: str
    tone: Tone
    enabled: bool


class _StoredOutput(_Stored):
    app_nudges: list[_StoredNudge] = Field(alias="appNudges")


class _StoredSchedule(_Stored):
    local_date: str = Field(alias="localDate")
    timezone: str
    language: str = "en"
    created_at: str = Field(default="", alias="createdAt")
    slot_table: list[_StoredSlot] = Field(alias="slotTable")
    agent_raw_output: _StoredOutput = Field(alias="agentRawOutput")


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

    def as_response(self) -> dict[str, Any]:
        return {
            "date": self.local_date,
            "timezone": self.timezone,
            "language": self.language,
            "generatedAt": self.generated_at,
            "nudges": [nudge.as_dict() for nudge in self.nudges],
            "count": len(self.nudges),
        }


def day_schedule(item: dict[str, Any]) -> DaySchedule:
    """The app's view of one stored schedule; StoredScheduleInvalid when it does not read."""
    try:
        stored = _StoredSchedule.model_validate(item)
        zone = ZoneInfo(stored.timezone)
        day = date.fromisoformat(stored.local_date)
        times = {slot.slot_index: slot.local_time for slot in stored.slot_table}
        nudges = []
        for nudge in sorted(stored.agent_raw_output.app_nudges, key=lambda n: n.slot_index):
            if not nudge.enabled:
                continue
            local_time = times[nudge.slot_index]
            minutes = parse_local_time(local_time)
            due = datetime.combine(day, time(minutes // 60, minutes % 60), tzinfo=zone)
            nudges.append(
                AppNudge(nudge.slot_index, local_time, due.isoformat(), nudge.hook, nudge.content, nudge.tone)
            )
    except ValidationError as error:
        raise StoredScheduleInvalid(f"stored schedule does not read: {summarise_errors(error)}") from None
    except (KeyError, ValueError) as error:
        raise StoredScheduleInvalid(f"stored schedule does not read: {error}") from None
    return DaySchedule(stored.local_date, stored.timezone, stored.language, stored.created_at, nudges)
