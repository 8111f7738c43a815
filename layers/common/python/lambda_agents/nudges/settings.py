"""Settings every nudge function reads the same way, validated once at cold start: the schedule
map (NUDGE_SCHEDULE_MAP) and the slot table's limits. The functions' own settings models inherit
them, so a variable means the same thing, with the same bounds, wherever it is set."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .slots import DEFAULT_SCHEDULE_MAP, SlotSettings, schedule_map_setting
from .tokens import MAX_SLOTS


class ScheduleMapSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    # Optional JSON {"problem": ["HH:MM", ...]}; unset, the built-in map.
    schedule_map: dict[str, list[str]] | None = Field(default=None, alias="NUDGE_SCHEDULE_MAP")

    @field_validator("schedule_map", mode="before")
    @classmethod
    def _parse_map(cls, value: Any) -> Any:
        return schedule_map_setting(value)

    def effective_map(self) -> Mapping[str, Sequence[str]]:
        return self.schedule_map or dict(DEFAULT_SCHEDULE_MAP)


class SlotTableSettings(ScheduleMapSettings):
    # At most what a slow hour's plan can be made of within the generator's timeout (``tokens``).
    max_slots: int = Field(default=15, alias="NUDGE_MAX_SLOTS", ge=1, le=MAX_SLOTS)
    min_spacing_minutes: int = Field(default=30, alias="NUDGE_MIN_SPACING_MINUTES", ge=0, le=720)

    def slots(self) -> SlotSettings:
        return SlotSettings(
            schedule_map=self.effective_map(), min_spacing_minutes=self.min_spacing_minutes, max_slots=self.max_slots
        )
