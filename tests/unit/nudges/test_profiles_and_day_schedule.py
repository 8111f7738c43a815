"""The user's side of nudges with in-memory ports: which day "today" is, what of a stored schedule
the app sees, and the profile rules the generator relies on."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from lambda_agents.nudges.day_schedule import StoredScheduleInvalid, day_schedule
from lambda_agents.nudges.profile_requests import ProfilePatch, ProfileRequest
from lambda_agents.nudges.profiles import NudgeProfileService, ProfileNotFound, ScheduleNotFound, UnknownProblems
from lambda_agents.nudges.slots import DEFAULT_SCHEDULE_MAP
from pydantic import ValidationError

from tests.support.nudge_fakes import MemoryUsers


@dataclass
class MemorySchedules:
    """Seeded items (drifted ones too, which no generator writes) and a log of the days asked for."""

    items: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    asked: list[tuple[str, str]] = field(default_factory=list)

    def get(self, user_id: str, local_date: str) -> dict[str, Any] | None:
        self.asked.append((user_id, local_date))
        return self.items.get((user_id, local_date))


def stored(local_date: str = "2026-03-08", timezone: str = "America/New_York", **overrides: Any) -> dict[str, Any]:
    nudges = [
        {"slotIndex": 0, "hook": "起きよう", "content": "c0", "tone": "gentle", "enabled": True, "reasoning": "r"},
        {"slotIndex": 1, "hook": "休もう", "content": "c1", "tone": "strict", "enabled": False, "reasoning": "r"},
        {"slotIndex": 2, "hook": "寝よう", "content": "c2", "tone": "playful", "enabled": True, "reasoning": "r"},
    ]
    return {
        "localDate": local_date,
        "timezone": timezone,
        "language": "ja",
        "createdAt": "2026-03-08T10:00:00+00:00",
        "slotTable": [
            {"slotIndex": 0, "localTime": "01:30", "problems": ["x"]},
            {"slotIndex": 1, "localTime": "12:00", "problems": ["x"]},
            {"slotIndex": 2, "localTime": "23:00", "problems": ["x"]},
        ],
        "agentRawOutput": {"rootCauseHypothesis": "secret", "appNudges": nudges, "tiktokPosts": [], "xPosts": []},
        "fallbackUsed": True,
        **overrides,
    }


def service(now: datetime, **schedules: dict[str, Any]) -> tuple[NudgeProfileService, MemorySchedules]:
    reader = MemorySchedules({(key.split("@")[0], key.split("@")[1]): item for key, item in schedules.items()})
    return NudgeProfileService(MemoryUsers(), reader, DEFAULT_SCHEDULE_MAP, clock=lambda: now), reader


def request(**fields: Any) -> ProfileRequest:
    body = {"problems": ["anxiety"], "preferredLanguage": "en", "timezone": "Asia/Tokyo", "nudgesEnabled": True}
    return ProfileRequest.model_validate({**body, **fields})


def test_without_a_date_the_day_is_today_in_the_profiles_zone_not_in_utc() -> None:
    nudges, reader = service(datetime(2026, 2, 1, 20, 5, tzinfo=UTC))  # 05:05 on the 2nd in Tokyo
    nudges.save("u1", request(timezone="Asia/Tokyo"))

    with pytest.raises(ScheduleNotFound):
        nudges.day("u1", None)

    assert reader.asked == [("u1", "2026-02-02")]


def test_without_a_profile_there_is_no_today_to_read() -> None:
    nudges, reader = service(datetime(2026, 2, 1, tzinfo=UTC))
    with pytest.raises(ProfileNotFound):
        nudges.day("u1", None)
    assert reader.asked == []


def test_the_app_sees_enabled_nudges_in_the_zone_the_day_was_generated_for() -> None:
    schedule = day_schedule(stored())  # 2026-03-08: New York moves to daylight time at 02:00

    assert [(n.slot_index, n.local_time, n.scheduled_at) for n in schedule.nudges] == [
        (0, "01:30", "2026-03-08T01:30:00-05:00"),
        (2, "23:00", "2026-03-08T23:00:00-04:00"),
    ]
    answer = schedule.as_response()
    assert answer["count"] == 2 and "secret" not in repr(answer) and "fallback" not in repr(answer).lower()


def test_a_tone_another_version_wrote_is_shown_as_it_is() -> None:
    item = stored()
    item["agentRawOutput"]["appNudges"][0]["tone"] = "motivational"
    schedule = day_schedule(item)
    assert [n.tone for n in schedule.nudges] == ["motivational", "playful"] and schedule.skipped == []


def test_a_nudge_or_slot_that_does_not_read_is_skipped_and_named_and_the_rest_is_shown() -> None:
    item = stored()
    item["agentRawOutput"]["appNudges"][0] = {"slotIndex": 0}  # no hook, content, tone
    item["slotTable"][2]["localTime"] = "25:99"
    schedule = day_schedule(item)
    assert schedule.nudges == []
    assert any("appNudges[0]" in part for part in schedule.skipped)
    assert any("slotTable[2]" in part for part in schedule.skipped)
    item = stored()
    item["slotTable"] = []
    assert [n.slot_index for n in day_schedule(item).nudges] == [] and day_schedule(item).skipped


def test_a_zone_that_no_longer_parses_is_read_in_the_profiles_and_a_bad_date_as_the_one_asked() -> None:
    schedule = day_schedule(
        stored(timezone="Nowhere/City", localDate="someday"), local_date="2026-03-08", profile_zone="Asia/Tokyo"
    )
    assert schedule.local_date == "2026-03-08" and schedule.timezone == "Asia/Tokyo"
    assert [n.scheduled_at for n in schedule.nudges] == ["2026-03-08T01:30:00+09:00", "2026-03-08T23:00:00+09:00"]
    assert len(schedule.skipped) == 2
    unreadable = day_schedule(stored(timezone="Nowhere/City"))
    assert unreadable.nudges == [] and unreadable.skipped


def test_the_service_reads_a_drifted_day_in_the_callers_zone_instead_of_failing() -> None:
    nudges, _ = service(datetime(2026, 3, 8, 12, tzinfo=UTC), **{"u1@2026-03-08": stored(timezone="Gone/Zone")})
    nudges.save("u1", request(timezone="America/New_York"))
    assert nudges.day("u1", "2026-03-08").nudges[0].scheduled_at == "2026-03-08T01:30:00-05:00"


@pytest.mark.parametrize("item", [None, "a schedule", ["list"]])
def test_only_an_item_that_is_no_object_at_all_is_refused(item: Any) -> None:
    with pytest.raises(StoredScheduleInvalid):
        day_schedule(item)


def test_unknown_problems_are_named_by_position_and_nothing_is_saved() -> None:
    nudges, _ = service(datetime(2026, 2, 1, tzinfo=UTC))
    with pytest.raises(UnknownProblems) as raised:
        nudges.save("u1", request(problems=["anxiety", "gaming", "smoking", "doomscrolling"]))
    assert raised.value.unknown == [(1, "gaming"), (3, "doomscrolling")]
    assert "staying_up_late" in str(raised.value)
    with pytest.raises(ProfileNotFound):
        nudges.get("u1")


def test_a_patch_changes_only_what_it_names() -> None:
    nudges, _ = service(datetime(2026, 2, 1, tzinfo=UTC))
    assert nudges.save("u1", request(problems=["smoking"])).created is True
    assert nudges.save("u1", request(problems=["smoking"])).created is False

    profile = nudges.update("u1", ProfilePatch.model_validate({"preferredLanguage": "JA_jp"}))

    assert (profile.preferred_language, profile.problems, profile.timezone) == ("ja", ("smoking",), "Asia/Tokyo")
    with pytest.raises(ProfileNotFound):
        nudges.update("u2", ProfilePatch.model_validate({"nudgesEnabled": False}))


@pytest.mark.parametrize(
    "fields",
    [{"preferredLanguage": "fr"}, {"preferredLanguage": "japanese"}, {"timezone": "America"}, {"problems": ["A"]}],
)
def test_what_a_stored_profile_would_read_leniently_is_refused_at_the_edge(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        request(**fields)
