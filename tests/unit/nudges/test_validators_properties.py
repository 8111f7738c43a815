"""Bad input: the nudge system's parsers and validators raise only their documented
errors on any input (hypothesis), never another exception."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from lambda_agents.nudges.generation import GenerationJob
from lambda_agents.nudges.pending import InvalidQuery, PendingFilter
from lambda_agents.nudges.profile import UserProfile
from lambda_agents.nudges.slots import validate_schedule_map
from pydantic import ValidationError

from tests.support.branches import Branches

TEXT = st.text(max_size=40)
QUERY_KEYS = st.sampled_from(["slot", "date", "limit", "nextToken", "other"])
ZONE_LIKE = st.one_of(
    TEXT,
    st.sampled_from(["Asia/Tokyo", "America", "../etc/passwd", "UTC/", "/", "a\x00b", "Etc/GMT+99", ".", "..", " "]),
)


def test_pending_filter_parse_raises_only_invalid_query_naming_a_parameter() -> None:
    reached = Branches()

    @settings(max_examples=300, deadline=None)
    @given(st.dictionaries(QUERY_KEYS, TEXT, max_size=5))
    def example(query: dict[str, str]) -> None:
        try:
            parsed = PendingFilter.parse(query)
        except InvalidQuery as error:
            reached.add("refused")
            assert error.parameter in {"slot", "date", "limit", "nextToken"}
            assert error.parameter in str(error)
        else:
            reached.add("parsed")
            assert 1 <= parsed.limit <= 100
            assert parsed.slot in (None, "morning", "evening")

    example()
    reached.assert_all("refused", "parsed")


# A body drawn from text is almost never a job: half the bodies are well-formed jobs.
JOB_BODIES = st.builds(
    lambda user_id, day: json.dumps({"userId": user_id, "localDate": day.isoformat()}),
    st.text(min_size=1, max_size=40),
    st.dates(),
)
LOCAL_TIMES = st.builds("{:02d}:{:02d}".format, st.integers(0, 23), st.integers(0, 59))


def test_a_queue_message_body_is_a_job_or_a_validation_error() -> None:
    reached = Branches()

    @settings(max_examples=300, deadline=None)
    @given(
        st.one_of(
            TEXT, st.dictionaries(st.sampled_from(["userId", "localDate", "x"]), TEXT).map(json.dumps), JOB_BODIES
        )
    )
    def example(body: str) -> None:
        try:
            job = GenerationJob.model_validate_json(body)
        except ValidationError:
            reached.add("refused")
            return
        reached.add("job")
        assert job.userId and len(job.localDate) == 10

    example()
    reached.assert_all("job", "refused")


def test_a_stored_profile_is_a_profile_or_a_validation_error() -> None:
    reached = Branches()

    @settings(max_examples=300, deadline=None)
    @given(ZONE_LIKE, st.one_of(TEXT, st.none(), st.integers()))
    def example(timezone: str, language: object) -> None:
        try:
            profile = UserProfile.model_validate({"userId": "u", "timezone": timezone, "preferredLanguage": language})
        except ValidationError:
            reached.add("refused")
            return
        reached.add("profile")
        assert profile.preferred_language in ("ja", "en")
        profile.zone()  # a validated zone always loads

    example()
    reached.assert_all("profile", "refused")


def test_a_schedule_map_is_accepted_or_rejected_with_a_value_error_naming_the_entry() -> None:
    reached = Branches()

    @settings(max_examples=300, deadline=None)
    # Text is almost never HH:MM: some times are drawn valid, so maps with times are accepted too.
    @given(st.dictionaries(TEXT, st.lists(st.one_of(TEXT, LOCAL_TIMES), max_size=4), max_size=4))
    def example(schedule_map: dict[str, list[str]]) -> None:
        try:
            validate_schedule_map(schedule_map)
        except ValueError as error:
            reached.add("refused")
            assert "schedule map entry" in str(error)
        else:
            reached.add("accepted with times" if any(schedule_map.values()) else "accepted without times")

    example()
    reached.assert_all("accepted with times", "refused")


def test_digits_outside_ascii_are_not_a_limit_or_a_time() -> None:
    import pytest

    for limit in ("¹", "٣", "１０"):
        with pytest.raises(InvalidQuery):
            PendingFilter.parse({"limit": limit})
    with pytest.raises(ValueError, match="schedule map entry"):
        validate_schedule_map({"anxiety": ["٠٨:٣٠"]})
