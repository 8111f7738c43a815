"""The user-facing nudge API's answers as response models (the OpenAPI contract; every answer is
validated against them before it leaves)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..response_model import ResponseModel
from .profile import UserProfile


class ProfileView(ResponseModel):
    problems: list[str]
    preferred_language: Literal["ja", "en"]
    timezone: str
    nudges_enabled: bool
    app_version: str

    @classmethod
    def of(cls, profile: UserProfile) -> ProfileView:
        fields: dict[str, Any] = profile.model_dump(by_alias=True, exclude={"user_id"})
        fields["problems"] = list(profile.problems)
        return cls.model_validate(fields)


class AppNudgeView(ResponseModel):
    slot_index: int = Field(ge=0)
    local_time: str = Field(description="HH:MM in the schedule's time zone")
    scheduled_at: str = Field(description="the instant it is due, ISO 8601 with offset")
    hook: str = Field(description="the notification's title")
    content: str
    tone: str = Field(
        description="strict, gentle, empathetic, analytical or playful; a day stored by another version may "
        "carry another, shown as it is"
    )


class DayScheduleView(ResponseModel):
    date: str = Field(description="the local date, YYYY-MM-DD")
    timezone: str = Field(description="the zone the day was generated for")
    language: str
    generated_at: str
    nudges: list[AppNudgeView] = Field(description="the enabled nudges, in time order")
    count: int = Field(ge=0)


class NudgeDataDeletedCounts(ResponseModel):
    profiles: int = Field(ge=0, le=1, description="1 when the profile was deleted by this request")
    schedules: int = Field(ge=0, description="days of nudges")
    posts: int = Field(ge=0, description="TikTok / X posts of those days, pending or not")
    generation_records: int = Field(ge=0, description="the generator's duplicate-delivery records")


class NudgeDataDeletedView(ResponseModel):
    deleted: NudgeDataDeletedCounts = Field(description="what this request deleted")
