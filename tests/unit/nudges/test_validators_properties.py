"""Issue 7, bad input: the nudge system's parsers and validators raise only their documented
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


@settings(max_examples=300, deadline=None)
@given(st.one_of(TEXT, st.dictionaries(st.sampled_from(["userId", "localDate", "x"]), TEXT).map(json.dumps)))
def test_a_queue_message_body_is_a_job_or_a_validation_error(body: str) -> None:
    try:
        job = GenerationJob.model_validate_json(body)
    except ValidationError:
        return
    assert job.userId and len(job.localDate) == 10


@settings(max_examples=300, deadline=None)
@given(ZONE_LIKE, st.one_of(TEXT, st.none(), st.integers()))
def test_a_stored_profile_is_a_profile_or_a_validation_error(timezone: str, language: object) -> None:
    try:
        profile = UserProfile.model_validate({"userId": "u", "timezone": timezone, "preferredLanguage": language})
    except ValidationError:
        return
    assert profile.preferred_language in ("ja", "en")
    profile.zone()  # a validated zone always loads


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(TEXT, st.lists(TEXT, max_size=4), max_size=4))
def test_a_schedule_map_is_accepted_or_rejected_with_a_value_error_naming_the_entry(
    schedule_map: dict[str, list[str]],
) -> None:
    try:
        validate_schedule_map(schedule_map)
    except ValueError as error:
        assert "schedule map entry" in str(error)


def test_digits_outside_ascii_are_not_a_limit_or_a_time() -> None:
    import pytest

    for limit in ("¹", "٣", "１０"):
        with pytest.raises(InvalidQuery):
            PendingFilter.parse({"limit": limit})
    with pytest.raises(ValueError, match="schedule map entry"):
        validate_schedule_map({"anxiety": ["٠٨:٣٠"]})
