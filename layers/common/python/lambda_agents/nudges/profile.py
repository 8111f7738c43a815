"""A user's nudge profile (docs/nudges.md#user-nudges-api): problems, language, timezone,
app version, whether nudges are on. Validated when read, so a bad stored row is named."""

from __future__ import annotations

from typing import Any, Literal
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from ..timezones import is_timezone, zone

Language = Literal["ja", "en"]


def normalise_language(value: object) -> Language:
    """'ja' stays 'ja' (also 'ja-JP'); anything else falls back to 'en' (docs/nudges.md#user-nudges-api)."""
    if isinstance(value, str) and value.strip().lower().replace("_", "-").split("-")[0] == "ja":
        return "ja"
    return "en"


class UserProfile(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore")

    user_id: str = Field(min_length=1, max_length=128)
    problems: tuple[str, ...] = ()
    preferred_language: Language = "en"
    timezone: str = "UTC"
    app_version: str = ""
    nudges_enabled: bool = True

    @field_validator("preferred_language", mode="before")
    @classmethod
    def _language(cls, value: Any) -> Language:
        return normalise_language(value)

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        if not is_timezone(value):
            raise ValueError(f"unknown IANA timezone {value!r}")
        return value

    def zone(self) -> ZoneInfo:
        return zone(self.timezone)
