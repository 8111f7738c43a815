"""The slot table: which local times of day a user gets a nudge (docs/nudges.md#the-slot-table:
decided by the system, never the agent).

Each problem maps to local times (a configurable schedule map); the times of all the user's
problems are merged, de-duplicated, kept ``min_spacing_minutes`` apart and trimmed to
``max_slots``. The agent only fills the table: its ``slotIndex`` values must be the table's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ScheduleMap = Mapping[str, Sequence[str]]

DEFAULT_SCHEDULE_MAP: dict[str, tuple[str, ...]] = {
    "staying_up_late": ("07:30", "12:30", "20:00", "21:30", "22:30", "23:30"),
    "procrastination": ("08:00", "09:00", "10:30", "14:00", "15:30", "17:00"),
    "anxiety": ("07:00", "11:00", "13:00", "16:00", "18:30", "21:00"),
    "self_loathing": ("07:00", "12:00", "19:00", "22:00"),
    "rumination": ("06:30", "10:00", "14:30", "19:30", "23:00"),
    "smoking": ("07:00", "10:00", "13:30", "16:30", "19:00", "22:00"),
    "phone_addiction": ("08:30", "12:00", "18:00", "21:00", "23:00"),
    "cant_wake_up": ("06:00", "06:30", "07:00", "22:00"),
}
DEFAULT_MIN_SPACING_MINUTES = 30
DEFAULT_MAX_SLOTS = 15
MINUTES_PER_DAY = 24 * 60


@dataclass(frozen=True)
class Slot:
    slot_index: int
    local_time: str  # "HH:MM" in the user's timezone
    problems: tuple[str, ...]

    def as_dict(self) -> dict[str, object]:
        return {"slotIndex": self.slot_index, "localTime": self.local_time, "problems": list(self.problems)}


def parse_local_time(text: str) -> int:
    """'HH:MM' -> minutes after midnight; ValueError naming the value otherwise."""
    hours, sep, minutes = text.partition(":")
    if not sep or not (text.isascii() and hours.isdigit() and minutes.isdigit()) or len(minutes) != 2:
        raise ValueError(f"local time {text!r} is not HH:MM")
    value = int(hours) * 60 + int(minutes)
    if int(hours) > 23 or int(minutes) > 59:
        raise ValueError(f"local time {text!r} is out of range")
    return value


def format_local_time(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def validate_schedule_map(schedule_map: ScheduleMap) -> None:
    """Fail at start-up, naming the problem and the time, rather than mid-run."""
    for problem, times in schedule_map.items():
        for time in times:
            try:
                parse_local_time(time)
            except ValueError as error:
                raise ValueError(f"schedule map entry {problem!r}: {error}") from None


def schedule_map_setting(value: Any) -> Any:
    """``NUDGE_SCHEDULE_MAP`` as settings read it: JSON text or a mapping, validated; None stays
    None (the built-in map). Every function that reads it uses this, so they agree on problems."""
    if isinstance(value, str):
        value = json.loads(value)
    if value is not None:
        validate_schedule_map(value)
    return value


def build_slot_table(
    problems: Iterable[str],
    schedule_map: ScheduleMap = DEFAULT_SCHEDULE_MAP,
    *,
    min_spacing_minutes: int = DEFAULT_MIN_SPACING_MINUTES,
    max_slots: int = DEFAULT_MAX_SLOTS,
) -> list[Slot]:
    """The user's slots in time order, indexed 0..n-1. Unknown problems add no time."""
    by_minute: dict[int, list[str]] = {}
    for problem in dict.fromkeys(problems):
        for time in schedule_map.get(problem, ()):
            by_minute.setdefault(parse_local_time(time), []).append(problem)
    kept = trim_slots(sorted(by_minute), min_spacing_minutes, max_slots)
    table = []
    for index, minute in enumerate(kept):
        owners = tuple(
            dict.fromkeys(p for m, ps in by_minute.items() if _owns(minute, m, min_spacing_minutes) for p in ps)
        )
        table.append(Slot(index, format_local_time(minute), owners))
    return table


def _owns(kept: int, candidate: int, spacing: int) -> bool:
    """A time dropped for being too close to a kept one hands its problems to that slot."""
    return kept <= candidate < kept + spacing


def trim_slots(minutes: Sequence[int], min_spacing_minutes: int, max_slots: int) -> list[int]:
    """Sorted unique minutes -> at most ``max_slots`` of them, at least the spacing apart.

    Spacing is enforced greedily from the morning (the earlier time wins). When more than
    ``max_slots`` remain, evenly spread ones are kept (first and last included) so that the
    day stays covered instead of only its morning.
    """
    if max_slots < 1:
        raise ValueError(f"max_slots must be at least 1, got {max_slots}")
    spaced: list[int] = []
    for minute in sorted(set(minutes)):
        if not spaced or minute - spaced[-1] >= min_spacing_minutes:
            spaced.append(minute)
    if len(spaced) <= max_slots:
        return spaced
    if max_slots == 1:
        return [spaced[0]]
    step = (len(spaced) - 1) / (max_slots - 1)
    return [spaced[round(i * step)] for i in range(max_slots)]


@dataclass(frozen=True)
class SlotSettings:
    """How a user's slot table is built: the schedule map and its limits."""

    schedule_map: Mapping[str, Sequence[str]] = field(default_factory=lambda: dict(DEFAULT_SCHEDULE_MAP))
    min_spacing_minutes: int = DEFAULT_MIN_SPACING_MINUTES
    max_slots: int = DEFAULT_MAX_SLOTS
