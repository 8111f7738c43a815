"""DynamoDB adapter for nudge schedules and their TikTok / X posts (SchedulesTable).

Item design (one table: the days' schedules and the pending endpoints' posts; docs/nudges.md#what-is-stored-where):
- schedule ``pk=USER#<userId>, sk=SCHEDULE#<localDate>``: slot table, agentRawOutput, fallback
  flag and reason, attempts, usage, model; ``expiresAt`` (TTL).
- post ``pk=POST#<postId>, sk=POST``: the post's fields, userId, scheduleId, localDate,
  status (pending / disabled / posted); ``expiresAt`` (TTL).
- cohort mark ``pk=COHORT#<timezone>, sk=<localDate>``: the scheduler queued that zone's users for
  that date (only when it plans starts from the provider's limits); ``expiresAt`` (TTL). It names a
  zone and a date, nothing of a user.

The schedule and its four posts are written in one transaction, each conditioned on
``attribute_not_exists(pk)``: one schedule per user and local date, never half written. With
``owner_table`` (the generator's UsersTable) the transaction also checks that the user's profile
exists and is not being deleted, so a generation that outlives its user's deletion stores nothing.

A user's nudge data is found without a Scan: their schedules are one partition (``USER#<id>``), and
each post's id is derived from its schedule (``records.post_id``), so ``user_schedules`` gives
every key a deletion needs.

PendingPostsIndex is sparse: only a post that is enabled (``enabled !== false``, so a legacy
post without the field too) and not yet published carries ``pendingKey=<platform>`` and
``pendingSort=<localDate>#<slot>#<postId>``. A read for a platform, date and slot is one Query
on a key prefix and reads only pending posts, however many schedules are stored. The partition
is the platform (not platform + date) because ``date`` is optional: every filter combination
stays one Query; the partition holds only what is pending, which the posting jobs keep small. Marking a post
published removes both attributes under a condition, which takes it out of the index.

Legacy rows: schedules written before post records existed keep their posts only inside
``agentRawOutput``; ``storage.posts_backfill`` writes their post records. A post record that lacks
``enabled`` is served as enabled.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from enum import StrEnum
from functools import partial
from typing import Any

from boto3.dynamodb.conditions import Attr, Key

from ..nudges.cohort_batches import CohortBatch
from ..nudges.deletion import UserSchedule
from ..nudges.records import POST_SLOTS, Platform, PostRecord, ProfileGone, ScheduleRecord, schedule_id
from ..paging import InvalidCursor, decode_key, encode_cursor
from .dynamodb import (
    ConditionFailed,
    StorageThrottled,
    batch_delete,
    batch_get,
    dynamodb_resource,
    from_dynamo,
    guarded,
    query_pages,
    retried_when_throttled,
    table,
    to_dynamo,
    transact_write,
)

PENDING_INDEX = "PendingPostsIndex"
MAX_BATCH_GET_ROUNDS = 4
POST_SK = "POST"
_PENDING_POST_OF_PLATFORM = "attribute_exists(pk) AND platform = :platform AND attribute_exists(pendingKey)"


def schedule_key(user_id: str, local_date: str) -> dict[str, str]:
    return {"pk": f"USER#{user_id}", "sk": f"SCHEDULE#{local_date}"}


def post_key(identifier: str) -> dict[str, str]:
    return {"pk": f"POST#{identifier}", "sk": POST_SK}


def pending_sort(local_date: str, slot: str, identifier: str) -> str:
    return f"{local_date}#{slot}#{identifier}"


def expires_at(created_at: str, ttl_days: int) -> int:
    return int((datetime.fromisoformat(created_at) + timedelta(days=ttl_days)).timestamp())


def schedule_item(record: ScheduleRecord, ttl_days: int) -> dict[str, Any]:
    return {
        **schedule_key(record.user_id, record.local_date),
        "type": "schedule",
        "scheduleId": record.schedule_id,
        "userId": record.user_id,
        "localDate": record.local_date,
        "timezone": record.timezone,
        "language": record.language,
        "appVersion": record.app_version,
        "slotTable": record.slot_table,
        "slotCount": len(record.slot_table),
        "agentRawOutput": record.agent_raw_output,
        "fallbackUsed": record.fallback_used,
        "fallbackReason": record.fallback_reason,
        "attempts": record.attempts,
        "usage": record.usage,
        "model": record.model,
        "account": record.account,
        "createdAt": record.created_at,
        "postsIndexed": True,
        "expiresAt": expires_at(record.created_at, ttl_days),
    }


def post_item(post: PostRecord, created_at: str, ttl_days: int) -> dict[str, Any]:
    item: dict[str, Any] = {
        **post_key(post.post_id),
        "type": "post",
        "postId": post.post_id,
        "platform": post.platform,
        "userId": post.user_id,
        "scheduleId": schedule_id(post.user_id, post.local_date),
        "localDate": post.local_date,
        "slot": post.slot,
        "post": post.fields,
        "status": "pending" if post.enabled and post.slot in POST_SLOTS else "disabled",
        "createdAt": created_at,
        "expiresAt": expires_at(created_at, ttl_days),
    }
    # A legacy post without a morning / evening slot is kept, but no posting job asks for it.
    if post.enabled and post.slot in POST_SLOTS:
        item["pendingKey"] = post.platform
        item["pendingSort"] = pending_sort(post.local_date, post.slot, post.post_id)
    return item


class MarkPostedOutcome(StrEnum):
    POSTED = "posted"
    ALREADY_POSTED = "already_posted"
    NOT_FOUND = "not_found"
    DISABLED = "disabled"


@dataclass(frozen=True)
class PendingPage:
    items: list[dict[str, Any]]
    next_token: str | None
    items_read: int  # what DynamoDB read (ScannedCount): the cost, for the benchmark and logs


def _pending_scope(platform: Platform) -> str:
    return f"pending-posts/{platform}"


def encode_token(platform: Platform, key: dict[str, Any]) -> str:
    """The pending listing's nextToken: its index key in a cursor bound to the platform (``paging``)."""
    return encode_cursor(_pending_scope(platform), from_dynamo(key))


# The pending index's key, which a nextToken carries.
PENDING_KEY = frozenset({"pk", "sk", "pendingKey", "pendingSort"})


def decode_token(token: str, platform: Platform) -> dict[str, Any]:
    key = decode_key(token, _pending_scope(platform), PENDING_KEY, parameter="nextToken")
    if key["pendingKey"] != platform:
        raise InvalidCursor("not a token this API issued", parameter="nextToken")
    return key


# The profile a schedule is written for: present, and no deletion of it begun.
OWNER_PRESENT = "attribute_exists(userId) AND attribute_not_exists(deletingAt)"


class DynamoScheduleRepository:
    def __init__(
        self,
        table_name: str,
        ttl_days: int = 30,
        sleep: Callable[[float], None] = time.sleep,
        *,
        owner_table: str | None = None,
    ) -> None:
        self._table_name = table_name
        self._table = table(table_name)
        self._ttl_days = ttl_days
        self._sleep = sleep
        self._owner_table = owner_table

    def recent(self, user_id: str, local_date: str, days: int) -> list[dict[str, Any]]:
        """Schedules from ``local_date - days`` to ``local_date`` included, newest first.

        One BatchGetItem of the known keys (dates are the sort keys): it reads only what
        exists, like a Query would, and costs the same however many schedules are stored.
        """
        first = date.fromisoformat(local_date)
        keys = [schedule_key(user_id, (first - timedelta(days=offset)).isoformat()) for offset in range(days + 1)]
        request: dict[str, Any] = {self._table_name: {"Keys": keys}}
        found: list[dict[str, Any]] = []
        for _ in range(MAX_BATCH_GET_ROUNDS):
            response = guarded(partial(dynamodb_resource().batch_get_item, RequestItems=request))
            found += response.get("Responses", {}).get(self._table_name, [])
            request = response.get("UnprocessedKeys") or {}
            if not request:
                break
        else:
            raise StorageThrottled(f"schedules of {user_id}: keys left unprocessed after {MAX_BATCH_GET_ROUNDS} rounds")
        items = [from_dynamo(item) for item in found]
        return sorted(items, key=lambda item: str(item.get("localDate", "")), reverse=True)

    def get(self, user_id: str, local_date: str) -> dict[str, Any] | None:
        item = guarded(lambda: self._table.get_item(Key=schedule_key(user_id, local_date))).get("Item")
        return None if item is None else from_dynamo(item)

    def create(self, record: ScheduleRecord) -> bool:
        """Write the schedule and its posts atomically; False when the schedule already exists,
        ProfileGone when the owner's profile is missing or being deleted (``owner_table`` set)."""
        items = [schedule_item(record, self._ttl_days)]
        items += [post_item(post, record.created_at, self._ttl_days) for post in record.posts()]
        owner: list[dict[str, Any]] = []
        if self._owner_table is not None:
            owner_key = {"userId": record.user_id}
            owner.append(
                {
                    "ConditionCheck": {
                        "TableName": self._owner_table,
                        "Key": owner_key,
                        "ConditionExpression": OWNER_PRESENT,
                    }
                }
            )
        transaction = owner + [
            {
                "Put": {
                    "TableName": self._table_name,
                    # The resource's client serialises plain values itself (boto3's transformation hook).
                    "Item": to_dynamo({k: v for k, v in item.items() if v is not None}),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
            for item in items
        ]
        try:
            # The Commander's answer is in hand: a throttled write is retried here, not by a
            # redelivery that would call the model again.
            retried_when_throttled(lambda: transact_write(transaction), sleep=self._sleep)
        except ConditionFailed as refused:
            if owner and 0 in refused.failed_items:
                raise ProfileGone(record.user_id) from None
            return False
        return True

    # -- deletion of a user's nudge data ------------------------------------------------------

    def user_schedules(self, user_id: str) -> list[UserSchedule]:
        """Every schedule of the user (one partition, read consistently, page by page)."""
        query: dict[str, Any] = {
            "KeyConditionExpression": Key("pk").eq(f"USER#{user_id}") & Key("sk").begins_with("SCHEDULE#"),
            "ConsistentRead": True,
            "ProjectionExpression": "sk, agentRawOutput",
        }
        found: list[UserSchedule] = []
        for page in query_pages(self._table, query):
            for raw in page.get("Items", []):
                item = from_dynamo(raw)
                found.append(UserSchedule(str(item["sk"]).removeprefix("SCHEDULE#"), item.get("agentRawOutput")))
        return found

    def existing_posts(self, post_ids: list[str]) -> list[str]:
        """Those of ``post_ids`` that are stored (read consistently)."""
        keys = [post_key(identifier) for identifier in post_ids]
        found = batch_get(self._table_name, keys, sleep=self._sleep)
        return sorted(str(item["pk"]).removeprefix("POST#") for item in found)

    def delete_posts(self, post_ids: list[str]) -> int:
        """Delete the posts: out of PendingPostsIndex with them, so no posting job is handed one."""
        return batch_delete(self._table_name, [post_key(identifier) for identifier in post_ids], sleep=self._sleep)

    def delete_schedules(self, user_id: str, local_dates: list[str]) -> int:
        keys = [schedule_key(user_id, local_date) for local_date in local_dates]
        return batch_delete(self._table_name, keys, sleep=self._sleep)


class DynamoPendingPostsStore:
    def __init__(self, table_name: str) -> None:
        self._table = table(table_name)

    def query_pending(
        self, platform: Platform, local_date: str | None, slot: str | None, limit: int, next_token: str | None
    ) -> PendingPage:
        prefix = ""
        if local_date is not None:
            prefix = f"{local_date}#" + (f"{slot}#" if slot is not None else "")
        condition = Key("pendingKey").eq(platform)
        if prefix:
            condition = condition & Key("pendingSort").begins_with(prefix)
        kwargs: dict[str, Any] = {"IndexName": PENDING_INDEX, "KeyConditionExpression": condition, "Limit": limit}
        if slot is not None and local_date is None:
            # Without a date the slot is not a key prefix: filtered after the read (still pending posts only).
            kwargs["FilterExpression"] = Attr("slot").eq(slot)
        if next_token is not None:
            kwargs["ExclusiveStartKey"] = decode_token(next_token, platform)
        page = guarded(lambda: self._table.query(**kwargs))
        last = page.get("LastEvaluatedKey")
        return PendingPage(
            [from_dynamo(item) for item in page.get("Items", [])],
            encode_token(platform, last) if last else None,
            int(page.get("ScannedCount", 0)),
        )

    def mark_posted(self, platform: Platform, identifier: str, caller: str, now: str) -> MarkPostedOutcome:
        try:
            guarded(
                lambda: self._table.update_item(
                    Key=post_key(identifier),
                    UpdateExpression="SET #status = :posted, postedAt = :now, postedBy = :caller "
                    "REMOVE pendingKey, pendingSort",
                    ConditionExpression=_PENDING_POST_OF_PLATFORM,
                    ExpressionAttributeNames={"#status": "status"},
                    ExpressionAttributeValues={
                        ":posted": "posted",
                        ":now": now,
                        ":caller": caller,
                        ":platform": platform,
                    },
                )
            )
        except ConditionFailed:
            item = guarded(lambda: self._table.get_item(Key=post_key(identifier), ConsistentRead=True)).get("Item")
            if item is None or item.get("platform") != platform:
                return MarkPostedOutcome.NOT_FOUND
            if item.get("status") == "posted":
                return MarkPostedOutcome.ALREADY_POSTED
            return MarkPostedOutcome.DISABLED
        return MarkPostedOutcome.POSTED


COHORT_MARK_DAYS = 7


class DynamoCohortMarks:
    """Which cohorts a planned scheduler run has queued (``nudges.scheduling.CohortMarks``)."""

    def __init__(self, table_name: str) -> None:
        self._table = table(table_name)

    def queued(self, zone: str, local_date: str) -> bool:
        key = {"pk": f"COHORT#{zone}", "sk": local_date}
        return "Item" in guarded(lambda: self._table.get_item(Key=key, ConsistentRead=True))

    def mark(self, zone: str, local_date: str) -> None:
        expires = int(time.time()) + COHORT_MARK_DAYS * 86_400
        item = {"pk": f"COHORT#{zone}", "sk": local_date, "expiresAt": expires}
        guarded(lambda: self._table.put_item(Item=item))


BATCH_RECORD_DAYS = 7


class DynamoCohortBatches:
    """The fan-out's batch jobs (``nudges.cohort_batches.CohortBatchStore``): ``BATCH#<localDate>`` /
    ``<zone>#<part>`` items in SchedulesTable, kept a week. A claim and a new part are written only
    if absent, every later change only while the item's ``state`` is the one the run read."""

    OPEN = ("submitted", "claimed")

    def __init__(self, table_name: str) -> None:
        self._table = table(table_name)

    def claim(self, batch: CohortBatch) -> bool:
        return self._put(self._item(replace(batch, part=0)), "attribute_not_exists(pk)", {})

    def save(self, batch: CohortBatch) -> None:
        if not self._put(self._item(batch), "attribute_not_exists(pk)", {}):
            raise ConditionFailed(f"the batch record {batch.label} exists already")

    def change(self, batch: CohortBatch, was: str) -> bool:
        return self._put(self._item(batch), "#state = :was", {":was": was})

    def _put(self, item: dict[str, Any], condition: str, values: dict[str, Any]) -> bool:
        kwargs: dict[str, Any] = {"Item": item, "ConditionExpression": condition}
        if values:
            kwargs |= {"ExpressionAttributeNames": {"#state": "state"}, "ExpressionAttributeValues": values}
        try:
            guarded(lambda: self._table.put_item(**kwargs))
        except ConditionFailed:
            return False
        return True

    def open_batches(self, local_dates: Sequence[str]) -> list[CohortBatch]:
        found: list[CohortBatch] = []
        for local_date in local_dates:
            kwargs: dict[str, Any] = {
                "KeyConditionExpression": Key("pk").eq(f"BATCH#{local_date}"),
                "FilterExpression": Attr("state").is_in(list(self.OPEN)),
                "ConsistentRead": True,
            }
            for page in query_pages(self._table, kwargs):
                found += [_cohort_batch(from_dynamo(item)) for item in page.get("Items", [])]
        return found

    @staticmethod
    def _item(batch: CohortBatch) -> dict[str, Any]:
        item: dict[str, Any] = {
            "pk": f"BATCH#{batch.local_date}",
            "sk": f"{batch.zone}#{batch.part}",
            "zone": batch.zone,
            "localDate": batch.local_date,
            "part": batch.part,
            "cutoff": batch.cutoff,
            "requests": batch.requests,
            "state": batch.state,
            "expiresAt": int(time.time()) + BATCH_RECORD_DAYS * 86_400,
        }
        if batch.batch_id is not None:
            item["batchId"] = batch.batch_id
        if batch.claim is not None:
            item["claim"] = batch.claim
        if batch.claimed_at is not None:
            item["claimedAt"] = batch.claimed_at
        if batch.model is not None:
            item["model"] = batch.model
        if batch.keys_from is not None and batch.keys_below is not None:
            item["keysFrom"], item["keysBelow"] = batch.keys_from, batch.keys_below
        if batch.signed_ids:
            item["signedIds"] = True
        return item


def _cohort_batch(item: dict[str, Any]) -> CohortBatch:
    return CohortBatch(
        zone=str(item["zone"]),
        local_date=str(item["localDate"]),
        part=int(item.get("part", 0)),
        cutoff=str(item["cutoff"]),
        batch_id=str(item["batchId"]) if item.get("batchId") else None,
        requests=int(item.get("requests", 0)),
        state=str(item.get("state", "submitted")),
        claim=str(item["claim"]) if item.get("claim") else None,
        claimed_at=str(item["claimedAt"]) if item.get("claimedAt") else None,
        model=str(item["model"]) if item.get("model") else None,
        keys_from=str(item["keysFrom"]) if item.get("keysFrom") is not None else None,
        keys_below=str(item["keysBelow"]) if item.get("keysBelow") is not None else None,
        signed_ids=bool(item.get("signedIds", False)),
    )
