"""The local runner's own control routes, under ``/_local/`` at the root of `make serve` only
(docs/local.md#the-local-runner-no-docker). They are not API routes: nothing in template.yaml or the OpenAPI
document names them, no stage or base path serves them, and API Gateway would answer them 403.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol
from urllib.parse import urlencode
from zoneinfo import ZoneInfoNotFoundError

from lambda_agents.api.request_body import BodyRefused
from lambda_agents.timezones import zone as zone_named

from .runner_api import IDENTITY_VALUE, USER_HEADER, ApiEntrances, HttpRequest, HttpResponse, json_response
from .runner_event_sources import DeliveryReport
from .runner_lambda import InvocationError
from .runner_template import FunctionSpec, QueueSubscription, ScheduleSpec, TemplateError

LOCAL_PREFIX = "/_local/"
NUDGE_DAY_PATH = "/_local/nudges/day"
SCHEDULER = "NudgeSchedulerFunction"
DEFAULT_GENERATION_HOUR = 5
# An hourly rule at a fixed minute, as the scheduler's: cron(minute * * * ? *).
_HOURLY_CRON = re.compile(r"^cron\((\d{1,2}) \* \* \* \? \*\)$")
# A zone's generation hour comes round once a day; a DST change can skip it for one day.
_HOURS_SEARCHED = 49


class LocalRunner(Protocol):
    """What these routes use of ``runner.LocalRunner``: the runner serves them, so they name it
    by what they need of it rather than by importing it back."""

    functions: dict[str, FunctionSpec]
    schedules: dict[str, list[ScheduleSpec]]
    subscriptions: dict[str, QueueSubscription]
    queue_urls: dict[str, str]
    entrances: ApiEntrances

    def function(self, logical_id: str) -> FunctionSpec: ...
    def environment_for(self, logical_id: str) -> dict[str, str]: ...
    def fire_schedule(self, function_id: str, event_name: str | None = None, *, at: datetime | None = None) -> Any: ...
    def holds_messages(self, queue_id: str) -> bool: ...
    def deliver(self, queue_id: str, *, redeliver_failures: bool = True) -> DeliveryReport: ...
    def handle_http(self, request: HttpRequest) -> HttpResponse: ...


class LocalRouteRefused(BodyRefused):
    """The control route cannot do what was asked; ``status`` / ``code`` / ``message`` answer it,
    as they answer a request that cannot reach a route (``api.request_body``)."""


def hourly_cron_minute(expression: str) -> int:
    """The minute of an hourly ``cron(M * * * ? *)`` rule; a TemplateError for any other shape."""
    matched = _HOURLY_CRON.match(expression.strip())
    if not matched or not 0 <= int(matched.group(1)) <= 59:
        raise TemplateError(
            f"{SCHEDULER}'s schedule is {expression!r}: the local day needs an hourly cron(M * * * ? *)"
        )
    return int(matched.group(1))


def nudge_day_banner(runner: LocalRunner, url: str) -> list[str]:
    """`make serve`'s lines on the route: the command, and which local date it makes."""
    rules = runner.schedules.get(SCHEDULER)
    if not rules or SCHEDULER not in runner.functions:
        return []
    hour = int(runner.environment_for(SCHEDULER).get("NUDGE_GENERATION_HOUR", DEFAULT_GENERATION_HOUR))
    at = f"{hour:02d}:{hourly_cron_minute(rules[0].expression):02d}"
    return [
        "a day of nudges now, by the scheduler and the generator, for a profile PUT as X-Local-User alice:",
        f"  curl -X POST -H 'X-Local-User: alice' {url}{NUDGE_DAY_PATH}",
        f"  (the day of the profile zone's last {at}: today there after {at}, else yesterday; the answer says "
        "which, and the GET /v1/nudges/schedule?date=... that reads it)",
    ]


def generation_moment(now: datetime, zone: str, generation_hour: int, cron_minute: int) -> datetime:
    """The latest moment at or before ``now`` (UTC) at which an hourly rule at ``cron_minute``
    fires while ``zone``'s local clock is in ``generation_hour``."""
    moment = now.astimezone(UTC).replace(minute=cron_minute, second=0, microsecond=0)
    if moment > now:
        moment -= timedelta(hours=1)
    local_zone = zone_named(zone)
    for _ in range(_HOURS_SEARCHED):
        if moment.astimezone(local_zone).hour == generation_hour:
            return moment
        moment -= timedelta(hours=1)
    raise ValueError(f"{zone} reached no {generation_hour:02d}:00 hour in the last {_HOURS_SEARCHED} hours")


@dataclass(frozen=True)
class NudgeDay:
    """What ``POST /_local/nudges/day`` did, for its answer."""

    user: str
    timezone: str
    fired_at: datetime
    local_date: str
    scheduler: dict[str, Any]
    deliveries: list[str]
    schedule_status: int
    schedule: Any


def local_route_answer(runner: LocalRunner, request: HttpRequest, now: Callable[[], datetime]) -> HttpResponse:
    """The answer of a ``/_local/`` route (the caller checked the prefix)."""
    if request.path.rstrip("/") != NUDGE_DAY_PATH:
        return _error(404, "NO_LOCAL_ROUTE", f"no local route {request.path}; the local route is POST {NUDGE_DAY_PATH}")
    if request.method.upper() != "POST":
        return _error(405, "METHOD_NOT_ALLOWED", f"{NUDGE_DAY_PATH} takes POST", headers=[("Allow", "POST")])
    try:
        day = make_nudge_day(runner, _user(request), now())
    except LocalRouteRefused as refused:
        return _error(refused.status, refused.code, refused.message, refused.details)
    except (TemplateError, InvocationError) as failed:  # the scheduler failed, or the template lacks a piece
        return _error(500, "LOCAL_RUNNER_ERROR", str(failed)[:1000])
    read_it = _read_command(runner, request, day)
    document = {
        "user": day.user,
        "timezone": day.timezone,
        "localDate": day.local_date,
        "scheduledEventTime": day.fired_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "localTime": day.fired_at.astimezone(zone_named(day.timezone)).isoformat(),
        "queued": day.scheduler.get("queued"),
        "deliveries": day.deliveries,
        "nudges": len(day.schedule.get("nudges", [])) if isinstance(day.schedule, dict) else 0,
        "read": read_it,
    }
    if day.schedule_status != 200:
        document["schedule"] = day.schedule
        return _error(
            502,
            "NO_DAY_MADE",
            f"the scheduler and the generator ran, but {day.user} has no day for {day.local_date} "
            f"(GET answered {day.schedule_status}); the runner's log says why",
            document,
        )
    return json_response(200, document, indent=2)  # read in a terminal


def make_nudge_day(runner: LocalRunner, user: str, now: datetime) -> NudgeDay:
    """Steps 1-4 of the module docstring for ``user`` at ``now``."""
    profile = _api(runner, user, "GET", "/nudges/profile")
    if profile[0] == 404:
        raise LocalRouteRefused(
            404, "PROFILE_NOT_FOUND", f"{user} has no nudge profile: PUT /v1/nudges/profile as {user} first"
        )
    if profile[0] != 200:
        raise LocalRouteRefused(502, "PROFILE_UNREADABLE", f"GET /v1/nudges/profile answered {profile[0]}", profile[1])
    if profile[1].get("nudgesEnabled") is False:
        raise LocalRouteRefused(
            409, "NUDGES_OFF", f"{user}'s nudges are off, so the scheduler skips them: PATCH nudgesEnabled to true"
        )
    zone = str(profile[1].get("timezone"))
    try:
        zone_named(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise LocalRouteRefused(502, "PROFILE_UNREADABLE", f"the profile's timezone {zone!r} is not one") from None
    rules = runner.schedules.get(SCHEDULER)
    if not rules:
        raise TemplateError(f"{SCHEDULER} has no Schedule event in the template")
    rule = rules[0]
    hour = int(runner.environment_for(SCHEDULER).get("NUDGE_GENERATION_HOUR", DEFAULT_GENERATION_HOUR))
    fired_at = generation_moment(now, zone, hour, hourly_cron_minute(rule.expression))
    local_date = fired_at.astimezone(zone_named(zone)).date().isoformat()
    scheduler = runner.fire_schedule(SCHEDULER, rule.event_name, at=fired_at)
    deliveries = _deliver(runner)
    status, schedule = _api(runner, user, "GET", "/nudges/schedule", {"date": local_date})
    return NudgeDay(user, zone, fired_at, local_date, scheduler, deliveries, status, schedule)


def _deliver(runner: LocalRunner) -> list[str]:
    """The queue the scheduler fills into its consumer until it holds no message (a failed one
    waits out its visibility timeout, as with Lambda's poller; `make serve`'s own poller may take
    some of them, as a second poller would), for at most the consumer's own timeout."""
    queue_url = runner.environment_for(SCHEDULER)["NUDGE_QUEUE_URL"]
    queue_id = next(queue for queue, url in runner.queue_urls.items() if url == queue_url)
    subscription = runner.subscriptions.get(queue_id)
    if subscription is None:
        raise TemplateError(f"no function consumes {queue_id}, the queue {SCHEDULER} fills")
    ends = time.monotonic() + runner.function(subscription.function_id).timeout_s
    summaries: list[str] = []
    while runner.holds_messages(queue_id) and time.monotonic() < ends:
        report = runner.deliver(queue_id, redeliver_failures=False)
        if report.deliveries:
            summaries.append(report.summary())
        else:
            time.sleep(0.2)  # the rest is in flight (the serve poller's) or waiting out a visibility timeout
    return summaries


def _api(
    runner: LocalRunner, user: str, method: str, path: str, query: dict[str, str] | None = None
) -> tuple[int, Any]:
    """A call of the API as ``user``, through the runner's own front door on the stage."""
    called = f"{runner.entrances.stage.prefix}{path}"
    answer = runner.handle_http(HttpRequest(method, called, urlencode(query or {}), [(USER_HEADER, user)], b""))
    return answer.status, json.loads(answer.body or b"null")


def _user(request: HttpRequest) -> str:
    values = [value.strip() for name, value in request.headers if name.lower() == USER_HEADER and value.strip()]
    if not values:
        raise LocalRouteRefused(
            400, "LOCAL_USER_REQUIRED", "send X-Local-User: <user id>, the user whose profile you PUT"
        )
    if not IDENTITY_VALUE.match(values[-1]):
        raise LocalRouteRefused(
            400, "LOCAL_USER_REQUIRED", "X-Local-User must be a user id of 1-128 letters, digits or _+=,.@:/-"
        )
    return values[-1]


def _read_command(runner: LocalRunner, request: HttpRequest, day: NudgeDay) -> str:
    """The command that reads the day, on the stage URL of the server the request came to."""
    url = f"http://{request.host}{runner.entrances.stage.prefix}/nudges/schedule?date={day.local_date}"
    return f"curl -H 'X-Local-User: {day.user}' '{url}'"


def _error(
    status: int, code: str, message: str, details: Any = None, headers: list[tuple[str, str]] | None = None
) -> HttpResponse:
    error: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        error["details"] = details
    return json_response(status, {"error": error}, headers or [], indent=2)
