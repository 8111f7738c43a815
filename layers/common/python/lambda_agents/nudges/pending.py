"""The pending-posts query behind ``GET /api/admin/{tiktok,x}/pending``
(docs/nudges.md#pending-posts-api, docs/nudges.md#never-a-fallback-post).

Returns the posts' fields (TikTok: caption, hashtags, tone, reasoning, slot; X: text,
reasoning, slot) plus postId, sourceUserId, scheduleId and date. ``enabled === false`` is never
returned: such posts are not in the pending index, and the filter is applied again here so a
row indexed by mistake cannot leak a fallback placeholder. A legacy post without ``enabled``
counts as enabled. The store is a port; the DynamoDB one is ``storage.nudges``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Any, Protocol

from ..errors import DomainError
from .records import POST_SLOTS, Platform, PostRecord, is_enabled

DEFAULT_LIMIT = 50
MAX_LIMIT = 100
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class InvalidQuery(DomainError, ValueError):
    """A malformed query value; ``parameter`` names it in the 400 answer."""

    code = "INVALID_QUERY"

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(message, details={"parameter": parameter})
        self.parameter = parameter


class PendingPage(Protocol):
    @property
    def items(self) -> list[dict[str, Any]]: ...

    @property
    def next_token(self) -> str | None: ...

    @property
    def items_read(self) -> int: ...


class PendingPostsStore(Protocol):
    def query_pending(
        self, platform: Platform, local_date: str | None, slot: str | None, limit: int, next_token: str | None
    ) -> PendingPage: ...


@dataclass(frozen=True)
class PendingFilter:
    slot: str | None = None
    local_date: str | None = None
    limit: int = DEFAULT_LIMIT
    next_token: str | None = None

    @classmethod
    def parse(cls, query: dict[str, str]) -> PendingFilter:
        """Validate raw query string values; InvalidQuery names the first bad parameter."""
        slot = query.get("slot")
        if slot is not None and slot not in POST_SLOTS:
            raise InvalidQuery("slot", f"slot must be 'morning' or 'evening', got {slot!r}")
        local_date = query.get("date")
        if local_date is not None:
            try:
                if not _DATE.match(local_date):
                    raise ValueError
                date.fromisoformat(local_date)
            except ValueError:
                raise InvalidQuery("date", f"date must be a calendar date YYYY-MM-DD, got {local_date!r}") from None
        raw_limit = query.get("limit")
        limit = DEFAULT_LIMIT
        if raw_limit is not None:
            # isascii: str.isdigit() also accepts "¹" or "٣", which int() does not read as a limit.
            if not (raw_limit.isascii() and raw_limit.isdigit()) or not 1 <= int(raw_limit) <= MAX_LIMIT:
                raise InvalidQuery("limit", f"limit must be an integer from 1 to {MAX_LIMIT}, got {raw_limit!r}")
            limit = int(raw_limit)
        token = query.get("nextToken")
        if token is not None and not token:
            raise InvalidQuery("nextToken", "nextToken must not be empty")
        return cls(slot, local_date, limit, token)


_FIELDS: dict[Platform, tuple[str, ...]] = {
    "tiktok": ("caption", "hashtags", "tone", "reasoning", "slot"),
    "x": ("text", "reasoning", "slot"),
}


def present(platform: Platform, item: dict[str, Any]) -> dict[str, Any]:
    """One pending post as the posting job reads it (the post's fields + ids).

    Shaped into the answer's documented types whatever was stored: a legacy post (written before
    the output model, or by hand) with a missing or non-text field answers ``null`` for it, and
    only its text hashtags, instead of failing the page it is on.
    """
    fields = _fields(item)
    shaped: dict[str, Any] = {name: _text(fields.get(name)) for name in _FIELDS[platform]}
    if platform == "tiktok":
        hashtags = fields.get("hashtags")
        shaped["hashtags"] = [tag for tag in hashtags if isinstance(tag, str)] if isinstance(hashtags, list) else []
    shaped["slot"] = slot_of(item)
    shaped.update(
        postId=item["postId"],
        sourceUserId=_text(item.get("userId")),
        scheduleId=_text(item.get("scheduleId")),
        date=_text(item.get("localDate")),
        enabled=True,
    )
    return shaped


def slot_of(item: dict[str, Any]) -> str | None:
    """The post's slot: the indexed one (what the query matched), else the one in its fields."""
    fields = _fields(item)
    for slot in (item.get("slot"), fields.get("slot")):
        if slot in POST_SLOTS:
            return str(slot)
    return None


def _fields(item: dict[str, Any]) -> dict[str, Any]:
    fields = item.get("post")
    return fields if isinstance(fields, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class PendingResult:
    posts: list[dict[str, Any]]
    next_token: str | None
    items_read: int


class PendingPostsQuery:
    def __init__(self, store: PendingPostsStore) -> None:
        self._store = store

    def run(self, platform: Platform, wanted: PendingFilter) -> PendingResult:
        page = self._store.query_pending(platform, wanted.local_date, wanted.slot, wanted.limit, wanted.next_token)
        posts = [
            present(platform, item)
            for item in page.items
            if is_enabled(_fields(item))
            and slot_of(item) is not None
            and (wanted.slot is None or slot_of(item) == wanted.slot)
        ]
        return PendingResult(posts, page.next_token, page.items_read)


__all__ = ["InvalidQuery", "PendingFilter", "PendingPostsQuery", "PendingResult", "PostRecord"]
