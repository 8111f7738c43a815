"""Post records for schedules written before post records existed (SchedulesTable; a one-off
migration, docs/nudges.md): their posts are only inside ``agentRawOutput`` (without ``enabled``).
``backfill_legacy_posts`` (a bounded, resumable scan; ``python -m devtools.backfill_posts`` runs it
to the end) writes their post records with the rule the generator writes by (``storage.nudges``),
so a legacy post without ``enabled`` becomes pending and one with ``enabled=false`` does not; the
schedule is marked ``postsIndexed`` so a later run skips it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from boto3.dynamodb.conditions import Attr

from ..nudges.records import post_records
from ..paging import InvalidCursor, decode_key, encode_cursor
from .dynamodb import ConditionFailed, from_dynamo, guarded, table, to_dynamo
from .nudges import post_item


@dataclass(frozen=True)
class BackfillReport:
    """One bounded run of ``backfill_legacy_posts``: what it did, and where the next run resumes
    (``next_token`` None: the table is done)."""

    schedules: int
    posts_written: int
    items_read: int
    next_token: str | None


def backfill_legacy_posts(
    table_name: str,
    *,
    resume_token: str | None = None,
    max_pages: int = 10,
    page_size: int = 100,
    now: str | None = None,
    ttl_days: int = 30,
) -> BackfillReport:
    """Give schedules stored before post records existed their post records (a one-off migration).

    Bounded and resumable: at most ``max_pages`` scan pages of ``page_size`` items per run; the
    report's ``next_token`` resumes where this run stopped (``devtools.backfill_posts`` loops
    until it is None). Idempotent: a post record that exists is left alone, and an indexed
    schedule is skipped, so a run repeated or interrupted anywhere writes nothing twice. Every
    post is kept: posts sharing a slot get their own ids (``records.post_records``).
    """
    target = table(table_name)
    created_at = now or datetime.now(UTC).isoformat()
    kwargs: dict[str, Any] = {
        "FilterExpression": Attr("sk").begins_with("SCHEDULE#") & Attr("postsIndexed").not_exists(),
        "Limit": page_size,
    }
    if resume_token is not None:
        kwargs["ExclusiveStartKey"] = _decode_scan_token(resume_token)
    schedules = written = read = 0
    for _ in range(max_pages):
        page = guarded(lambda: target.scan(**kwargs))
        read += int(page.get("ScannedCount", 0))
        for item in (from_dynamo(raw) for raw in page.get("Items", [])):
            for record in post_records(str(item["userId"]), str(item["localDate"]), item.get("agentRawOutput")):
                post = post_item(record, created_at, ttl_days)
                if "expiresAt" in item:
                    post["expiresAt"] = item["expiresAt"]
                written += int(_put_if_absent(target, post))
            _mark_indexed(target, item)
            schedules += 1
        last = page.get("LastEvaluatedKey")
        if not last:
            return BackfillReport(schedules, written, read, None)
        kwargs["ExclusiveStartKey"] = last
    return BackfillReport(
        schedules, written, read, encode_cursor(BACKFILL_SCOPE, from_dynamo(kwargs["ExclusiveStartKey"]))
    )


BACKFILL_SCOPE = "legacy-posts-backfill"


def _decode_scan_token(token: str) -> dict[str, Any]:
    try:
        return decode_key(token, BACKFILL_SCOPE, frozenset({"pk", "sk"}))
    except InvalidCursor:
        raise InvalidCursor("the resume token is not one a backfill run printed") from None


def _put_if_absent(target: Any, item: dict[str, Any]) -> bool:
    try:
        guarded(lambda: target.put_item(Item=to_dynamo(item), ConditionExpression="attribute_not_exists(pk)"))
    except ConditionFailed:
        return False
    return True


def _mark_indexed(target: Any, item: dict[str, Any]) -> None:
    guarded(
        lambda: target.update_item(
            Key={"pk": item["pk"], "sk": item["sk"]},
            UpdateExpression="SET postsIndexed = :indexed",
            ExpressionAttributeValues={":indexed": True},
        )
    )
