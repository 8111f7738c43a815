"""PendingPostsFunction: the admin API the TikTok / X posting jobs call
(docs/nudges.md#pending-posts-api).

- ``GET /api/admin/{tiktok,x}/pending?slot=&date=&limit=&nextToken=``: pending posts only
  (``enabled === false`` never; a legacy post without ``enabled`` counts as enabled), read
  through the sparse PendingPostsIndex.
- ``POST /api/admin/{tiktok,x}/posts/{postId}/posted``: marks a post published, conditionally;
  a second call answers 200 with ``alreadyPosted: true``; a disabled post is a 409.

Authentication: the routes use IAM (``AWS_IAM``); API Gateway rejects unsigned calls with 403
and the handler answers 401 when no IAM caller is on the request. This function makes no LLM
call and imports no LLM code.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.metrics import MetricUnit
from lambda_agents.api.errors import Conflict, NotFound
from lambda_agents.api.identity import caller_admin_arn
from lambda_agents.api.resolver import build_resolver
from lambda_agents.composition import CompositionRoot
from lambda_agents.config import load_settings
from lambda_agents.nudges.pending import PendingFilter, PendingPostsQuery
from lambda_agents.nudges.pending_api import (
    DateQuery,
    LimitQuery,
    NextTokenQuery,
    PostMarkedPosted,
    SlotQuery,
    TiktokPendingPage,
    XPendingPage,
)
from lambda_agents.nudges.records import Platform
from lambda_agents.observability import logger, metrics
from lambda_agents.storage.nudges import DynamoPendingPostsStore, MarkPostedOutcome
from pydantic import BaseModel, ConfigDict, Field

PLATFORM_ROUTES: dict[str, Platform] = {"tiktok": "tiktok", "x": "x"}
POST_ID_MAX_CHARS = 100
# A post id is "<platform>-" and a key (records.post_id); the rest is kept loose for stored legacy ids.
TiktokPostId = Annotated[str, Path(pattern=r"^tiktok-[A-Za-z0-9_-]{1,93}$", max_length=POST_ID_MAX_CHARS)]
XPostId = Annotated[str, Path(pattern=r"^x-[A-Za-z0-9_-]{1,98}$", max_length=POST_ID_MAX_CHARS)]


class PendingSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    schedules_table: str = Field(alias="SCHEDULES_TABLE", min_length=1)


def bootstrap(*, store: DynamoPendingPostsStore | None = None) -> DynamoPendingPostsStore:
    """The function's composition root (``lambda_agents.composition``): the posts' store."""
    return store or DynamoPendingPostsStore(load_settings(PendingSettings).schedules_table)


dependencies = CompositionRoot(bootstrap)


app: APIGatewayRestResolver = build_resolver(auth="iam")


def _query_values(slot: str | None, date: str | None, limit: int | None, next_token: str | None) -> dict[str, str]:
    values = {"slot": slot, "date": date, "limit": None if limit is None else str(limit), "nextToken": next_token}
    return {key: value for key, value in values.items() if value is not None}


def _pending(platform: Platform, query: dict[str, str]) -> dict[str, Any]:
    caller_admin_arn(app.current_event.raw_event)
    wanted = PendingFilter.parse(query)
    result = PendingPostsQuery(dependencies()).run(platform, wanted)
    logger.info(
        "pending posts read", extra={"platform": platform, "returned": len(result.posts), "read": result.items_read}
    )
    metrics.add_metric(name="PendingPostsReturned", unit=MetricUnit.Count, value=len(result.posts))
    metrics.add_metric(name="PendingPostsItemsRead", unit=MetricUnit.Count, value=result.items_read)
    key = "tiktokPosts" if platform == "tiktok" else "xPosts"
    return {key: result.posts, "count": len(result.posts), "nextToken": result.next_token}


def _mark_posted(platform: Platform, post_id: str) -> dict[str, Any]:
    caller = caller_admin_arn(app.current_event.raw_event)
    outcome = dependencies().mark_posted(platform, post_id, caller, datetime.now(UTC).isoformat())
    if outcome is MarkPostedOutcome.NOT_FOUND:
        raise NotFound(f"no {platform} post {post_id!r}")
    if outcome is MarkPostedOutcome.DISABLED:
        raise Conflict(f"post {post_id!r} is disabled (a fallback placeholder) and cannot be published")
    metrics.add_metric(
        name="PostsMarkedPublished", unit=MetricUnit.Count, value=int(outcome is MarkPostedOutcome.POSTED)
    )
    logger.info("post marked published", extra={"platform": platform, "post_id": post_id, "outcome": outcome.value})
    return {"postId": post_id, "status": "posted", "alreadyPosted": outcome is MarkPostedOutcome.ALREADY_POSTED}


@app.get("/api/admin/tiktok/pending")  # type: ignore[untyped-decorator]
def tiktok_pending(
    slot: SlotQuery = None, date: DateQuery = None, limit: LimitQuery = None, next_token: NextTokenQuery = None
) -> TiktokPendingPage:
    return TiktokPendingPage.model_validate(_pending("tiktok", _query_values(slot, date, limit, next_token)))


@app.get("/api/admin/x/pending")  # type: ignore[untyped-decorator]
def x_pending(
    slot: SlotQuery = None, date: DateQuery = None, limit: LimitQuery = None, next_token: NextTokenQuery = None
) -> XPendingPage:
    return XPendingPage.model_validate(_pending("x", _query_values(slot, date, limit, next_token)))


@app.post("/api/admin/tiktok/posts/<post_id>/posted")  # type: ignore[untyped-decorator]
def tiktok_posted(post_id: TiktokPostId) -> PostMarkedPosted:
    return PostMarkedPosted.model_validate(_mark_posted("tiktok", post_id))


@app.post("/api/admin/x/posts/<post_id>/posted")  # type: ignore[untyped-decorator]
def x_posted(post_id: XPostId) -> PostMarkedPosted:
    return PostMarkedPosted.model_validate(_mark_posted("x", post_id))


@logger.inject_lambda_context
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    metrics.add_metric(name="PendingPostsRequests", unit=MetricUnit.Count, value=1)
    return app.resolve(event, context)
