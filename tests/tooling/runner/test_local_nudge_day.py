"""`POST /_local/nudges/day` on `make serve`: a profile made there gets its day of nudges now,
through the scheduler's event and the queue into the generator, and `GET /v1/nudges/schedule`
then shows it (the schedule route answered 404 with no documented way to a day)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from devtools.runner import LocalRunner, serving
from devtools.runner_local import NUDGE_DAY_PATH, generation_moment, hourly_cron_minute, nudge_day_banner
from devtools.runner_template import TemplateError
from devtools.template import ROOT
from tests.support.http_json import exchange

pytestmark = pytest.mark.integration


# -- the moment the scheduler's rule makes a zone due ---------------------------------------------


@pytest.mark.parametrize(
    ("now", "zone", "expected", "local_date"),
    [
        pytest.param(
            "2026-11-27T03:24:00Z", "Asia/Tokyo", "2026-11-26T20:05:00Z", "2026-11-27", id="tokyo_after_0505_today"
        ),
        pytest.param(
            "2026-11-26T19:00:00Z", "Asia/Tokyo", "2026-11-25T20:05:00Z", "2026-11-26", id="tokyo_at_0400_yesterday"
        ),
        pytest.param(
            "2026-11-26T20:05:00Z", "Asia/Tokyo", "2026-11-26T20:05:00Z", "2026-11-27", id="tokyo_at_0505_exactly"
        ),
        pytest.param(
            "2026-11-27T03:24:00Z", "Asia/Kolkata", "2026-11-27T00:05:00Z", "2026-11-27", id="a_half_hour_zone_0535"
        ),
        pytest.param(
            "2026-07-01T12:00:00Z", "America/New_York", "2026-07-01T09:05:00Z", "2026-07-01", id="new_york_in_summer"
        ),
    ],
)
def test_the_moment_is_the_latest_firing_at_or_before_now_with_the_zone_in_its_generation_hour(
    now: str, zone: str, expected: str, local_date: str
) -> None:
    moment = generation_moment(datetime.fromisoformat(now), zone, generation_hour=5, cron_minute=5)

    assert moment == datetime.fromisoformat(expected)
    assert moment.astimezone(ZoneInfo(zone)).date().isoformat() == local_date


def test_a_generation_hour_a_dst_change_skips_is_found_the_day_before() -> None:
    # 2026-03-08 in New York jumps from 01:59 to 03:00: no 02:05 that day.
    moment = generation_moment(datetime(2026, 3, 8, 12, 0, tzinfo=UTC), "America/New_York", 2, 5)

    assert moment == datetime(2026, 3, 7, 7, 5, tzinfo=UTC)  # 02:05 EST on the 7th


def test_only_an_hourly_cron_at_a_fixed_minute_is_understood() -> None:
    assert hourly_cron_minute("cron(5 * * * ? *)") == 5
    with pytest.raises(TemplateError, match="hourly cron"):
        hourly_cron_minute("rate(1 hour)")


# -- through make serve's front door, on the real template -----------------------------------------


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[LocalRunner, str]]:
    with LocalRunner(environ={"AWS_DEFAULT_REGION": "us-east-1"}) as runner, serving(runner) as url:
        yield runner, url


def _put_profile(url: str, user: str, zone: str, enabled: bool = True) -> None:
    profile = {"problems": ["staying_up_late"], "preferredLanguage": "ja", "timezone": zone, "nudgesEnabled": enabled}
    headers = {"X-Local-User": user, "Content-Type": "application/json"}
    status, _, body = exchange(f"{url}/v1/nudges/profile", "PUT", headers, json.dumps(profile).encode())
    assert status in {200, 201}, body


def test_given_a_profile_made_under_serve_when_its_day_is_asked_for_then_the_schedule_route_shows_it(
    served: tuple[LocalRunner, str],
) -> None:
    _, url = served
    _put_profile(url, "day-alice", "Asia/Tokyo")
    asked_at = datetime.now(UTC)

    status, headers, day = exchange(f"{url}{NUDGE_DAY_PATH}", "POST", {"X-Local-User": "day-alice"}, timeout_s=300)

    assert status == 200, day
    assert headers["Content-Type"] == "application/json"
    fired = datetime.fromisoformat(day["scheduledEventTime"])
    tokyo = fired.astimezone(ZoneInfo("Asia/Tokyo"))
    assert fired <= asked_at and (tokyo.hour, tokyo.minute) == (5, 5)
    assert day["localDate"] == tokyo.date().isoformat() and day["localTime"] == tokyo.isoformat()
    assert day["queued"] >= 1 and day["nudges"] > 0
    assert any("NudgeQueue -> NudgeGeneratorFunction" in line for line in day["deliveries"])
    assert day["read"] == (f"curl -H 'X-Local-User: day-alice' '{url}/v1/nudges/schedule?date={day['localDate']}'")
    read, _, schedule = exchange(
        f"{url}/v1/nudges/schedule?date={day['localDate']}", headers={"X-Local-User": "day-alice"}
    )
    assert read == 200
    assert (schedule["date"], schedule["timezone"], schedule["count"]) == (
        day["localDate"],
        "Asia/Tokyo",
        day["nudges"],
    )
    # Asked again: the scheduler has queued nothing new for the date, and the same day stands.
    again_status, _, again = exchange(f"{url}{NUDGE_DAY_PATH}", "POST", {"X-Local-User": "day-alice"}, timeout_s=300)
    assert (again_status, again["localDate"], again["nudges"]) == (200, day["localDate"], day["nudges"])


@pytest.mark.parametrize(
    ("method", "path", "headers", "status", "code"),
    [
        pytest.param("POST", NUDGE_DAY_PATH, {}, 400, "LOCAL_USER_REQUIRED", id="no_user"),
        pytest.param("POST", NUDGE_DAY_PATH, {"X-Local-User": "a b"}, 400, "LOCAL_USER_REQUIRED", id="not_a_user_id"),
        pytest.param("POST", NUDGE_DAY_PATH, {"X-Local-User": "day-nobody"}, 404, "PROFILE_NOT_FOUND", id="no_profile"),
        pytest.param("GET", NUDGE_DAY_PATH, {"X-Local-User": "day-alice"}, 405, "METHOD_NOT_ALLOWED", id="get"),
        pytest.param("POST", "/_local/nudges/week", {"X-Local-User": "day-alice"}, 404, "NO_LOCAL_ROUTE", id="unknown"),
        pytest.param(
            "POST",
            f"/v1{NUDGE_DAY_PATH}",
            {"X-Local-User": "day-alice"},
            403,
            "MISSING_AUTHENTICATION_TOKEN",
            id="not_on_the_stage",
        ),
    ],
)
def test_the_local_route_says_what_is_missing_and_is_never_part_of_the_api(
    served: tuple[LocalRunner, str], method: str, path: str, headers: dict[str, str], status: int, code: str
) -> None:
    _, url = served

    got, _, body = exchange(f"{url}{path}", method, headers)

    assert (got, body["error"]["code"]) == (status, code)


def test_a_profile_with_nudges_off_is_told_why_no_day_comes(served: tuple[LocalRunner, str]) -> None:
    _, url = served
    _put_profile(url, "day-off", "Europe/Paris", enabled=False)

    status, _, body = exchange(f"{url}{NUDGE_DAY_PATH}", "POST", {"X-Local-User": "day-off"})

    assert (status, body["error"]["code"]) == (409, "NUDGES_OFF")


def test_the_local_route_is_in_neither_the_template_nor_the_api_document(served: tuple[LocalRunner, str]) -> None:
    _, url = served
    _, _, document = exchange(f"{url}/openapi.json")

    assert "_local" not in (ROOT / "template.yaml").read_text(encoding="utf-8")
    assert not [path for path in document["paths"] if "_local" in path]


def test_make_serves_banner_shows_the_one_command(served: tuple[LocalRunner, str]) -> None:
    runner, url = served

    lines = nudge_day_banner(runner, url)

    assert f"  curl -X POST -H 'X-Local-User: alice' {url}{NUDGE_DAY_PATH}" in lines
    assert any("05:05" in line for line in lines)
