"""The scheduler's EventBridge event: its ``time`` says which local dates are due."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from lambda_agents.nudges.schedule_event import InvalidScheduleEvent, scheduled_time

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
