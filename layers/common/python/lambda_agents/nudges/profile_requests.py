"""What the app may send about its user's nudge profile (``PUT`` / ``PATCH /nudges/profile``),
checked at the edge against the same rules as a stored ``UserProfile``, only stricter where a
stored row is merely read leniently:

- ``preferredLanguage``: ``ja`` or ``en``, also as a locale tag (``ja-JP``, ``en_US``), stored as
  ``ja`` / ``en``. A stored ``fr`` reads as ``en`` (docs/nudges.md#user-nudges-api); sent, it is a 400,
  so a client learns that no French nudges exist instead of silently getting English ones.
- ``timezone``: an IANA zone tzdata lists (``lambda_agents.timezones``). The scheduler finds users
  through TimezoneIndex, keyed on this attribute: every written profile carries a valid zone, so
  it is in the index from its first write and moves with every change.
- ``problems``: keys of the schedule map (``NUDGE_SCHEDULE_MAP``, checked by the service, which
  knows the map): an unknown problem would silently give no slot at all. Repeats are dropped.
- ``nudgesEnabled``: a JSON boolean (``"false"`` is not false).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints, field_validator, model_validator

from ..timezones import is_timezone
from .profile import Language, normalise_language

MAX_PROBLEMS = 20
PROBLEM_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"
LANGUAGE_PATTERN = r"^([jJ][aA]|[eE][nN])([-_][A-Za-z0-9]{1,8}){0,3}$"
APP_VERSION_PATTERN = r"^[0-9A-Za-z.+_-]{0,32}$"

ProblemKey = Annotated[str, StringConstraints(pattern=PROBLEM_PATTERN)]
LanguageTag = Annotated[
    str,
    Field(
        max_length=35,
        description="ja or en, optionally as a locale tag (ja-JP); stored as ja / en",
        json_schema_extra={"pattern": LANGUAGE_PATTERN},  # checked by _language, with a message that says why
    ),
]
TimezoneName = Annotated[str, Field(min_length=1, max_length=64, description="an IANA time zone, e.g. Asia/Tokyo")]
AppVersion = Annotated[str, Field(pattern=APP_VERSION_PATTERN, description="the app's version, e.g. 2.4.0")]


def _zone(value: str | None) -> str | None:
    if value is not None and not is_timezone(value):
        raise ValueError(f"unknown IANA time zone {value!r} (e.g. Asia/Tokyo, Europe/Paris, UTC)")
    return value


def _language(value: str | None) -> Language | None:
    if value is None:
        return None
    if not re.fullmatch(LANGUAGE_PATTERN, value):
        raise ValueError(f"nudges exist in ja and en only (a locale tag such as ja-JP is fine), not {value!r}")
    return normalise_language(value)


def _unique(values: list[str] | None) -> list[str] | None:
    return None if values is None else list(dict.fromkeys(values))


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class ProfileRequest(_Request):
    """The whole profile (``PUT``): creates it, or replaces every field of it."""

    problems: list[ProblemKey] = Field(max_length=MAX_PROBLEMS, description="schedule-map keys; [] for none")
    preferred_language: LanguageTag = Field(alias="preferredLanguage")
    timezone: TimezoneName
    nudges_enabled: StrictBool = Field(alias="nudgesEnabled")
    app_version: AppVersion = Field(default="", alias="appVersion")

    _problems = field_validator("problems")(_unique)
    _timezone = field_validator("timezone")(_zone)
    _language_tag = field_validator("preferred_language")(_language)

    def fields(self) -> dict[str, Any]:
        """The stored profile's attributes, by their stored names."""
        return self.model_dump(by_alias=True)


class ProfilePatch(_Request):
    """Some fields (``PATCH``); absent or null ones stay as they are."""

    problems: list[ProblemKey] | None = Field(default=None, max_length=MAX_PROBLEMS)
    preferred_language: LanguageTag | None = Field(default=None, alias="preferredLanguage")
    timezone: TimezoneName | None = None
    nudges_enabled: StrictBool | None = Field(default=None, alias="nudgesEnabled")
    app_version: AppVersion | None = Field(default=None, alias="appVersion")

    _problems = field_validator("problems")(_unique)
    _timezone = field_validator("timezone")(_zone)
    _language_tag = field_validator("preferred_language")(_language)

    @model_validator(mode="after")
    def _changes_something(self) -> ProfilePatch:
        if not self.fields():
            raise ValueError("give at least one of problems, preferredLanguage, timezone, nudgesEnabled, appVersion")
        return self

    def fields(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)
