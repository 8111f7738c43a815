"""The pending-posts API's documented shapes: query parameters and answers (docs/nudges.md#pending-posts-api).

Declared as pydantic models so the resolver publishes them in OpenAPI and validates every answer
against them; ``PendingFilter`` still checks what a schema cannot (a real calendar date). Their
field types are the output model's (``schema.TiktokPost`` / ``XPost``) or wider, never narrower:
whatever the generator may store, these answers accept (a property test generates stored posts
from the output model and legacy shapes and serialises them through these models).
"""

from __future__ import annotations

from typing import Annotated, Literal

from aws_lambda_powertools.event_handler.openapi.params import Query

from ..response_model import ResponseModel
from .pending import MAX_LIMIT
from .records import PostSlot

SlotQuery = Annotated[Literal["morning", "evening"] | None, Query(description="Only posts for this slot")]
DateQuery = Annotated[
    str | None,
    Query(pattern=r"^\d{4}-\d{2}-\d{2}$", description="Only posts for this local date (YYYY-MM-DD)"),
]
LimitQuery = Annotated[int | None, Query(ge=1, le=MAX_LIMIT, description="Page size (default 50)")]
NextTokenQuery = Annotated[
    str | None,
    Query(alias="nextToken", min_length=1, max_length=4096, description="The previous page's nextToken"),
]


class _PendingPost(ResponseModel):
    slot: PostSlot
    reasoning: str | None
    post_id: str
    source_user_id: str | None
    schedule_id: str | None
    date: str | None
    enabled: Literal[True]


class PendingTiktokPost(_PendingPost):
    caption: str | None
    hashtags: list[str]
    # The output model's type (docs/nudges.md#the-output-schema: any string), not the app
    # nudges' tone list: a stored post must never make its page fail.
    tone: str | None


class PendingXPost(_PendingPost):
    text: str | None


class TiktokPendingPage(ResponseModel):
    tiktok_posts: list[PendingTiktokPost]
    count: int
    next_token: str | None


class XPendingPage(ResponseModel):
    x_posts: list[PendingXPost]
    count: int
    next_token: str | None


class PostMarkedPosted(ResponseModel):
    post_id: str
    status: Literal["posted"]
    already_posted: bool
