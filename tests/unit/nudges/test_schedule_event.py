"""The scheduler's EventBridge event (its ``time`` says which local dates are due) and the
generator's local-date window: examples, then any input."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lambda_agents.nudges.schedule_event import EARLIEST, MAX_CLOCK_SKEW, InvalidScheduleEvent, scheduled_time

from tests.support.branches import Branches

from .conftest import generator_takes

NOW = datetime(2026, 2, 1, 20, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        ({"time": "2026-02-01T20:05:00Z", "detail-type": "Scheduled Event"}, datetime(2026, 2, 1, 20, 5, tzinfo=UTC)),
        ({"time": "2026-02-02T05:05:00+09:00"}, datetime(2026, 2, 1, 20, 5, tzinfo=UTC)),
        ({"time": "2026-02-01T21:29:00Z"}, datetime(2026, 2, 1, 21, 29, tzinfo=UTC)),  # within the clock skew
        ({"time": "2025-12-01T00:00:00Z"}, datetime(2025, 12, 1, tzinfo=UTC)),  # an old event replayed
        ({}, NOW),  # a manual invocation
    ],
)
def test_the_events_time_is_the_moment_the_dates_are_computed_for(event: dict[str, Any], expected: datetime) -> None:
    assert scheduled_time(event, NOW) == expected


@pytest.mark.parametrize(
    ("event", "named"),
    [
        ({"time": "9999-12-31T23:59:59Z"}, "past the clock"),
        ({"time": "9999-12-31T23:59:59-05:00"}, "out of range"),
        ({"time": "2026-02-01T23:00:00Z"}, "past the clock"),
        ({"time": "1970-01-01T00:00:00Z"}, "not between 2000-01-01"),
        ({"time": "2026-02-01T20:05:00"}, "time"),  # no zone: which hour is it?
        ({"time": "yesterday"}, "time"),
        ({"time": 12}, "time"),
        ([], "JSON object"),
    ],
)
def test_a_time_that_is_malformed_or_far_from_the_clock_is_refused_naming_it(event: Any, named: str) -> None:
    with pytest.raises(InvalidScheduleEvent, match=named):
        scheduled_time(event, NOW)


# Any datetime from year 1 to 9999 almost never lies in the accepted span: some are drawn around it.
NEAR_NOW = st.datetimes(min_value=datetime(1999, 12, 31), max_value=datetime(2026, 2, 2), timezones=st.timezones())
ANY_TIME = st.one_of(
    st.datetimes(timezones=st.timezones()).map(lambda moment: moment.isoformat()),
    NEAR_NOW.map(lambda moment: moment.isoformat()),
    st.datetimes().map(lambda moment: moment.isoformat()),  # without a zone
    st.sampled_from(["9999-12-31T23:59:59Z", "9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00"]),
    st.text(max_size=40),
    st.integers(),
    st.floats(),
    st.none(),
)
# Days around NOW's, in every zone's today, so that some dates are generated: st.dates() alone almost never is.
NEAR_TODAY = st.dates(min_value=date(2026, 1, 28), max_value=date(2026, 2, 6))


def test_any_event_time_gives_a_moment_within_the_bounds_or_the_typed_error() -> None:
    reached = Branches()

    @given(time=ANY_TIME, extra=st.dictionaries(st.text(max_size=10), st.text(max_size=10), max_size=3))
    def example(time: object, extra: dict[str, str]) -> None:
        try:
            moment = scheduled_time({**extra, "time": time}, NOW)
        except InvalidScheduleEvent:
            reached.add("refused")
            return
        reached.add("now" if time is None else "event time")
        assert EARLIEST <= moment <= NOW + MAX_CLOCK_SKEW and moment.tzinfo is not None

    example()
    reached.assert_all("event time", "now", "refused")


def test_any_local_date_is_generated_or_refused_with_the_typed_error() -> None:
    reached = Branches()

    @given(
        local_date=st.one_of(st.dates(), NEAR_TODAY),
        zone=st.sampled_from(["Pacific/Kiritimati", "Etc/GMT+12", "Asia/Tokyo", "UTC"]),
    )
    def example(local_date: date, zone: str) -> None:
        if not generator_takes(local_date, zone, NOW):
            reached.add("refused")
            return
        reached.add("generated")
        today = NOW.astimezone(ZoneInfo(zone)).date()
        assert -2 <= (local_date - today).days <= 1

    example()
    reached.assert_all("generated", "refused")
