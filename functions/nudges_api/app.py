"""NudgesApiFunction: the app's own nudge data (docs/nudges.md#user-nudges-api), Cognito-authorised.

- ``GET /nudges/profile`` -> the caller's profile: problems, preferredLanguage, timezone,
  nudgesEnabled, appVersion; 404 ``PROFILE_NOT_FOUND`` before the first ``PUT``.
- ``PUT /nudges/profile`` -> creates (201) or replaces (200) the whole profile;
  ``PATCH /nudges/profile`` changes the fields it names (404 without a profile). Validated like a
  stored profile, stricter at the edge (``lambda_agents.nudges.profile_requests``); problems must
  be keys of the schedule map (``NUDGE_SCHEDULE_MAP`` or the built-in one): 400 naming the unknown
  ones. What the generator and the scheduler's TimezoneIndex read is what this writes.
- ``GET /nudges/schedule?date=YYYY-MM-DD`` -> the caller's enabled nudges of that local date (today
  in the profile's zone without ``date``): time, hook, content, tone; nothing of the agent's
  reasoning and none of the TikTok / X posts. 404 ``SCHEDULE_NOT_FOUND`` when none was generated.

- ``DELETE /nudges/profile`` -> 200 with what was deleted: the profile (out of TimezoneIndex, so
  the scheduler stops queuing the user), every schedule and post (pending posts leave
  PendingPostsIndex) and the generator's idempotency records (``lambda_agents.nudges.deletion``).
  A generation under way for the user gets 409 ``GENERATION_IN_PROGRESS`` with Retry-After: the
  deletion has begun (the posts are gone, nothing is readable, nothing more is generated) and the
  same DELETE finishes it; so does a repeat after any failure. 404 ``PROFILE_NOT_FOUND`` when
  nothing is stored. A PUT while a deletion is unfinished is 409 ``PROFILE_BEING_DELETED``.

Only the caller's own data: the user id is the token's ``sub``, no route takes one. A separate
function from PendingPostsFunction because that one is IAM-authorised for the posting jobs and
one resolver checks one kind of identity. This function makes no LLM call and imports no LLM code.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from lambda_agents.api.errors import BadRequest
from lambda_agents.api.identity import caller_user_id
from lambda_agents.api.resolver import build_resolver
from lambda_agents.composition import CompositionRoot
from lambda_agents.config import ConfigError, load_settings
from lambda_agents.nudges.app_views import DayScheduleView, NudgeDataDeletedView, ProfileView
from lambda_agents.nudges.deletion import GenerationInFlight, NudgeDataDeletion
from lambda_agents.nudges.profile_requests import ProfilePatch, ProfileRequest
from lambda_agents.nudges.profiles import (
    NudgeProfileService,
)
from lambda_agents.nudges.settings import ScheduleMapSettings
from lambda_agents.observability import logger, metrics
from lambda_agents.storage.generation_records import DynamoGenerationRecords
from lambda_agents.storage.nudges import DynamoScheduleRepository
from lambda_agents.storage.users import DynamoUserRepository
from pydantic import Field

app = build_resolver()


class NudgesApiSettings(ScheduleMapSettings):
    users_table: str = Field(alias="USERS_TABLE", min_length=1)
    schedules_table: str = Field(alias="SCHEDULES_TABLE", min_length=1)
    idempotency_table: str = Field(alias="IDEMPOTENCY_TABLE", min_length=1)  # the generator's records


@dataclass(frozen=True)
class Dependencies:
    profiles: NudgeProfileService
    deletion: NudgeDataDeletion


def bootstrap(*, settings: NudgesApiSettings | None = None) -> Dependencies:
    """The function's composition root (``lambda_agents.composition``)."""
    try:
        settings = settings or load_settings(NudgesApiSettings)
    except (ConfigError, ValueError) as error:
        raise ConfigError(f"NudgesApiFunction settings: {error}") from None
    users = DynamoUserRepository(settings.users_table)
    schedules = DynamoScheduleRepository(settings.schedules_table)
    return Dependencies(
        profiles=NudgeProfileService(users, schedules, settings.effective_map()),
        deletion=NudgeDataDeletion(users, schedules, DynamoGenerationRecords(settings.idempotency_table)),
    )


dependencies = CompositionRoot(bootstrap)


@app.get("/nudges/profile", summary="Read the caller's nudge profile")
def get_profile() -> ProfileView:
    user_id = caller_user_id(app.current_event.raw_event)
    return ProfileView.of(dependencies().profiles.get(user_id))


@app.put(
    "/nudges/profile",
    summary="Create or replace the caller's nudge profile",
    responses={
        200: {"description": "Replaced", "content": {"application/json": {"model": ProfileView}}},
        201: {"description": "Created", "content": {"application/json": {"model": ProfileView}}},
    },
)
def put_profile(body: ProfileRequest) -> Response[ProfileView]:
    user_id = caller_user_id(app.current_event.raw_event)
    saved = dependencies().profiles.save(user_id, body)
    metrics.add_metric(name="NudgeProfilesSaved", unit=MetricUnit.Count, value=1)
    logger.info("nudge profile saved", extra={"profile_created": saved.created, "timezone": saved.profile.timezone})
    return Response(
        status_code=201 if saved.created else 200,
        content_type="application/json",
        body=ProfileView.of(saved.profile),
    )


@app.patch("/nudges/profile", summary="Change some fields of the caller's nudge profile")
def patch_profile(body: ProfilePatch) -> ProfileView:
    user_id = caller_user_id(app.current_event.raw_event)
    profile = dependencies().profiles.update(user_id, body)
    metrics.add_metric(name="NudgeProfilesSaved", unit=MetricUnit.Count, value=1)
    logger.info("nudge profile changed", extra={"fields": sorted(body.fields())})
    return ProfileView.of(profile)


@app.delete(
    "/nudges/profile",
    summary="Delete the caller's nudge data: profile, schedules, posts and the generator's records",
)
def delete_profile() -> NudgeDataDeletedView:
    user_id = caller_user_id(app.current_event.raw_event)
    try:
        deleted = dependencies().deletion.delete(user_id)
    except GenerationInFlight as busy:
        logger.info("nudge data deletion waits for a generation", extra={"posts_deleted": busy.posts_deleted})
        raise
    answer = deleted.as_response()
    metrics.add_metric(name="NudgeDataDeleted", unit=MetricUnit.Count, value=1)
    logger.info("nudge data deleted", extra=answer["deleted"])
    return NudgeDataDeletedView.model_validate(answer)


@app.get("/nudges/schedule", summary="The caller's nudges of one local date, as the app shows them")
def get_schedule(
    date_: Annotated[
        str | None,
        Query(alias="date", pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$", description="YYYY-MM-DD; absent: today"),
    ] = None,
) -> DayScheduleView:
    user_id = caller_user_id(app.current_event.raw_event)
    if date_ is not None:
        try:
            date.fromisoformat(date_)
        except ValueError:
            raise BadRequest(
                f"date {date_!r} is not a calendar date",
                code="VALIDATION_ERROR",
                details=[{"field": "query.date", "message": "not a calendar date"}],
            ) from None
    schedule = dependencies().profiles.day(user_id, date_)
    metrics.add_metric(name="NudgeSchedulesRead", unit=MetricUnit.Count, value=1)
    if schedule.skipped:
        # A day stored by another version: shown as well as it reads; what did not read is named here.
        metrics.add_metric(name="StoredNudgesSkipped", unit=MetricUnit.Count, value=len(schedule.skipped))
        logger.warning(
            "parts of a stored schedule could not be shown",
            extra={"local_date": schedule.local_date, "skipped": schedule.skipped[:20]},
        )
    return DayScheduleView.model_validate(schedule.as_response())


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    metrics.add_metric(name="NudgesApiRequests", unit=MetricUnit.Count, value=1)
    return app.resolve(event, context)
