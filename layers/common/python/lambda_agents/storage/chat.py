"""DynamoDB adapter for chat sessions, messages, drafts and audit records (ChatTable;
docs/chat-and-templates.md#storage; the per-user rate limit's log is ``storage.chat_rate_limit``).

Items (every one carries ``expiresAt``, the table's TTL):
- session ``pk=SESSION#<id>, sk=META``: userId, context, createdAt, updatedAt, ``messageCount``.
- message ``pk=SESSION#<id>, sk=MSG#<seq:08d>``: role, content, kind, replyTo, templateDraft (the
  parse status), createdAt; a user's message handed to the worker carries ``answerPendingSince``
  until its answer is stored (the answer's transaction removes it).
- draft ``pk=SESSION#<id>, sk=DRAFT#<seq:08d>``: the validated template JSON of the answer with
  that seq; the latest is one Query (newest first, Limit 1), so no pointer can go stale.
- audit ``pk=SESSION#<id>, sk=AUDIT#<seq:08d>``: the turn's audit record (no message text).

A user message sent with an ``Idempotency-Key`` keeps the key (``idempotencyKey``): deleting the
session computes the ids of the retry records that hold copies of its answers from it.

UserSessionsIndex (keys only: ``userId``, ``createdAt``) lists a user's sessions; only session
items carry both attributes, so the index holds sessions and nothing else, and its entries are
written and removed with the sessions themselves. Being keys-only, it is not rewritten on every
message; a listing reads the page's sessions by key (consistently) after the index query.

Deletion (``mark_deleting`` -> ``delete_contents`` -> ``delete_session_record``): the session is
first marked (``deletingAt``, and its counter moved so that a turn that read the old count
cannot append), which makes it invisible to every reader and refuses the answer write of a turn
still in flight; then everything under its key is deleted; the session item goes last. A
deletion interrupted half way leaves a marked session that only its owner's DELETE can see,
and that DELETE finishes the work.

Order: a user message takes ``messageCount + 1`` and reserves ``+ 2`` for its answer, in one
transaction conditioned on the count read (optimistic concurrency: a concurrent turn makes the
condition fail, and the write is retried on the new count). Seq numbers sort as strings because
they are zero-padded. The answer, its draft, its audit record, the session's ``updatedAt`` and the
end of its user message's wait are one more transaction: either all are stored or none. That
write holds an answer already paid for while the user waits, so a throttled attempt is retried
twice more (``ANSWER_WRITE_BACKOFF_S``) on top of boto3's own retries before the request fails
with 503.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from boto3.dynamodb.conditions import Key

from ..chat.audit import TurnAudit
from ..chat.records import DraftRecord, MessageKind, SessionRecord, StoredMessage
from ..chat.sessions import MessagePage, SessionContents, SessionListPage, SessionPosition
from ..chat.store import AnswerExists, SessionGone, StoredTurn, UserMessage
from .chat_items import (
    META,
    audit_sk,
    draft_sk,
    message_from_item,
    message_item,
    message_sk,
    session_key,
    session_record,
    without_none,
)
from .dynamodb import (
    ConditionFailed,
    batch_delete,
    batch_get,
    from_dynamo,
    guarded,
    retried_when_throttled,
    table,
    transact_write,
)

USER_SESSIONS_INDEX = "UserSessionsIndex"
APPEND_ATTEMPTS = 3
ANSWER_WRITE_BACKOFF_S = (0.2, 0.5)  # the answer is paid for: a throttled write is tried twice more


class ConcurrentUpdate(ConditionFailed):
    """The session kept changing under the write (or vanished): the client may retry."""


class AnswerSeqTaken(AnswerExists, ConditionFailed):
    """The answer's seq is written already: for the worker, a turn answered before (nothing to
    do); for a request, a conflicting write (409), like any refused condition."""


class AnswerToDeletedSession(SessionGone, ConditionFailed):
    """The session is gone or being deleted: for the worker, a turn with nowhere to store its
    answer (nothing to do); for a request, a conflicting write (409), like any refused condition."""


class DynamoChatStore:
    """The ChatStore port of ``chat.store`` and the DraftSource port of ``chat.template_from_session``."""

    def __init__(self, table_name: str, sleep: Callable[[float], None] = time.sleep) -> None:
        self._table_name = table_name
        self._table = table(table_name)
        self._sleep = sleep

    # -- sessions -----------------------------------------------------------------------------

    def create_session(self, session: SessionRecord, expires_at: int) -> None:
        item = {
            **session_key(session.session_id),
            "type": "session",
            "sessionId": session.session_id,
            "userId": session.user_id,
            "context": session.context.as_dict(),
            "createdAt": session.created_at,
            "updatedAt": session.created_at,
            "messageCount": 0,
            "expiresAt": expires_at,
            "templateSeed": session.template_seed or None,
        }
        guarded(lambda: self._table.put_item(Item=without_none(item), ConditionExpression="attribute_not_exists(pk)"))

    def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or None when it does not exist or is being deleted."""
        item = guarded(lambda: self._table.get_item(Key=session_key(session_id), ConsistentRead=True)).get("Item")
        if item is None or "deletingAt" in item:
            return None
        return session_record(from_dynamo(item))

    def session_page(self, user_id: str, limit: int, after: SessionPosition | None) -> SessionListPage:
        """The user's sessions, newest first, ``limit`` at most, starting after ``after``.

        The index is eventually consistent: a session created a moment ago may be missing from
        it for a moment, and one being deleted is skipped when its item is read.
        """
        query: dict[str, Any] = {
            "IndexName": USER_SESSIONS_INDEX,
            "KeyConditionExpression": Key("userId").eq(user_id),
            "ScanIndexForward": False,
            "Limit": limit + 1,  # one more tells whether another page follows
        }
        if after is not None:
            query["ExclusiveStartKey"] = {
                **session_key(after.session_id),
                "userId": user_id,
                "createdAt": after.created_at,
            }
        entries = guarded(lambda: self._table.query(**query)).get("Items", [])
        listed = entries[:limit]
        found = {
            item["pk"]: item
            for item in batch_get(self._table_name, [{"pk": e["pk"], "sk": META} for e in listed])
            if "deletingAt" not in item and item.get("userId") == user_id
        }
        sessions = [session_record(from_dynamo(found[e["pk"]])) for e in listed if e["pk"] in found]
        last = None
        if len(entries) > limit:
            tail = listed[-1]
            last = SessionPosition(str(tail["createdAt"]), str(tail["pk"]).removeprefix("SESSION#"))
        return SessionListPage(sessions, last)

    # -- messages -----------------------------------------------------------------------------

    def append_user_message(self, session: SessionRecord, sent: UserMessage) -> int:
        count = session.message_count
        created_at, expires_at = sent.created_at, sent.expires_at
        for attempt in range(APPEND_ATTEMPTS):
            seq = count + 1
            message = StoredMessage(seq, "user", sent.content, created_at, MessageKind.MESSAGE)
            try:
                transact_write(
                    [
                        {
                            "Update": {
                                "TableName": self._table_name,
                                "Key": session_key(session.session_id),
                                "UpdateExpression": "SET messageCount = :reserved, updatedAt = :now, expiresAt = :exp",
                                "ConditionExpression": "userId = :user AND messageCount = :count",
                                "ExpressionAttributeValues": {
                                    ":reserved": count + 2,
                                    ":now": created_at,
                                    ":exp": expires_at,
                                    ":user": session.user_id,
                                    ":count": count,
                                },
                            }
                        },
                        self._put(
                            message_item(
                                session.session_id, message, expires_at, sent.idempotency_key, sent.client_message_id
                            )
                        ),
                    ]
                )
            except ConditionFailed:
                current = self.get_session(session.session_id)
                if current is None or current.user_id != session.user_id or attempt == APPEND_ATTEMPTS - 1:
                    raise ConcurrentUpdate(f"session {session.session_id} changed during the write") from None
                count = current.message_count
                continue
            return seq
        raise ConcurrentUpdate(f"session {session.session_id} changed during the write")  # pragma: no cover

    def recent_messages(self, session_id: str, limit: int) -> list[StoredMessage]:
        page = guarded(
            lambda: self._table.query(
                KeyConditionExpression=Key("pk").eq(f"SESSION#{session_id}") & Key("sk").begins_with("MSG#"),
                ScanIndexForward=False,
                Limit=limit,
                ConsistentRead=True,
            )
        )
        return sorted((message_from_item(item) for item in page.get("Items", [])), key=lambda m: m.seq)

    def message_page(self, session_id: str, limit: int, before_seq: int | None) -> MessagePage:
        """Up to ``limit`` messages older than ``before_seq`` (the newest ones without it), oldest
        first, strongly consistent."""
        condition = Key("pk").eq(f"SESSION#{session_id}")
        if before_seq is None:
            condition = condition & Key("sk").begins_with("MSG#")
        else:
            condition = condition & Key("sk").between(message_sk(0), message_sk(before_seq - 1))
        page = guarded(
            lambda: self._table.query(
                KeyConditionExpression=condition, ScanIndexForward=False, Limit=limit + 1, ConsistentRead=True
            )
        )
        items = page.get("Items", [])
        newest = sorted((message_from_item(item) for item in items[:limit]), key=lambda m: m.seq)
        return MessagePage(newest, has_older=len(items) > limit)

    def append_assistant_turn(
        self, session_id: str, message: StoredMessage, draft: DraftRecord | None, audit: TurnAudit, expires_at: int
    ) -> None:
        items = [self._put(message_item(session_id, message, expires_at))]
        if draft is not None:
            items.append(
                self._put(
                    {
                        "pk": f"SESSION#{session_id}",
                        "sk": draft_sk(draft.seq),
                        "type": "draft",
                        "seq": draft.seq,
                        "payload": draft.payload,
                        "createdAt": draft.created_at,
                        "expiresAt": expires_at,
                    }
                )
            )
        items.append(
            self._put(
                {
                    "pk": f"SESSION#{session_id}",
                    "sk": audit_sk(message.seq),
                    "type": "audit",
                    **audit.as_dict(),
                    "createdAt": message.created_at,
                    "expiresAt": expires_at,
                }
            )
        )
        session_update = len(items)
        items.append(
            {
                "Update": {
                    "TableName": self._table_name,
                    "Key": session_key(session_id),
                    "UpdateExpression": "SET updatedAt = :now, expiresAt = :exp",
                    # A session marked for deletion takes no answer: it would outlive the deletion.
                    "ConditionExpression": "attribute_exists(pk) AND attribute_not_exists(deletingAt)",
                    "ExpressionAttributeValues": {":now": message.created_at, ":exp": expires_at},
                }
            }
        )
        if message.reply_to is not None:
            # The user's message it answers waits no more (``answerPendingSince`` goes); an answer
            # is only ever stored for a user's message that exists.
            items.append(
                {
                    "Update": {
                        "TableName": self._table_name,
                        "Key": {"pk": f"SESSION#{session_id}", "sk": message_sk(message.reply_to)},
                        "UpdateExpression": "REMOVE answerPendingSince",
                        "ConditionExpression": "attribute_exists(pk) AND #role = :user",
                        "ExpressionAttributeNames": {"#role": "role"},
                        "ExpressionAttributeValues": {":user": "user"},
                    }
                }
            )
        try:
            retried_when_throttled(lambda: transact_write(items), ANSWER_WRITE_BACKOFF_S, self._sleep)
        except ConditionFailed as refused:
            if 0 in refused.failed_items:
                raise AnswerSeqTaken(f"session {session_id}: answer {message.seq} exists") from None
            if session_update in refused.failed_items:
                raise AnswerToDeletedSession(f"session {session_id} is gone or being deleted") from None
            raise

    def mark_answer_pending(self, session_id: str, user_seq: int, since: str) -> None:
        guarded(
            lambda: self._table.update_item(
                Key={"pk": f"SESSION#{session_id}", "sk": message_sk(user_seq)},
                UpdateExpression="SET answerPendingSince = :since",
                ConditionExpression="attribute_exists(pk) AND #role = :user",
                ExpressionAttributeNames={"#role": "role"},
                ExpressionAttributeValues={":since": since, ":user": "user"},
            )
        )

    def turn(self, session_id: str, user_seq: int) -> StoredTurn:
        pk = f"SESSION#{session_id}"
        keys = [{"pk": pk, "sk": message_sk(user_seq)}, {"pk": pk, "sk": message_sk(user_seq + 1)}]
        keys.append({"pk": pk, "sk": audit_sk(user_seq + 1)})
        found = {str(item["sk"]): item for item in batch_get(self._table_name, keys)} if user_seq >= 1 else {}
        message = found.get(message_sk(user_seq))
        answer = found.get(message_sk(user_seq + 1))
        audit = found.get(audit_sk(user_seq + 1))
        return StoredTurn(
            message=None if message is None else message_from_item(message),
            answer=None if answer is None else message_from_item(answer),
            pending=message is not None and "answerPendingSince" in message,
            audit=None if audit is None else from_dynamo(audit),
        )

    def latest_draft(self, session_id: str) -> DraftRecord | None:
        page = guarded(
            lambda: self._table.query(
                KeyConditionExpression=Key("pk").eq(f"SESSION#{session_id}") & Key("sk").begins_with("DRAFT#"),
                ScanIndexForward=False,
                Limit=1,
                ConsistentRead=True,
            )
        )
        items = page.get("Items", [])
        if not items:
            return None
        value = from_dynamo(items[0])
        return DraftRecord(session_id, int(value["seq"]), dict(value["payload"]), str(value.get("createdAt", "")))

    # -- deletion -----------------------------------------------------------------------------

    def mark_deleting(self, session_id: str, user_id: str, now: str) -> SessionRecord | None:
        """Mark the user's session for deletion (again, when an earlier deletion was cut short);
        None when there is no such session of this user."""
        try:
            response = guarded(
                lambda: self._table.update_item(
                    Key=session_key(session_id),
                    UpdateExpression="SET deletingAt = if_not_exists(deletingAt, :now) ADD messageCount :moved",
                    ConditionExpression="userId = :user",
                    ExpressionAttributeValues={":now": now, ":moved": 1, ":user": user_id},
                    ReturnValues="ALL_NEW",
                )
            )
        except ConditionFailed:
            return None
        return session_record(from_dynamo(response["Attributes"]))

    def session_contents(self, session_id: str) -> SessionContents:
        """Every item under the session but the session item, read consistently, page by page."""
        contents = SessionContents()
        query: dict[str, Any] = {
            "KeyConditionExpression": Key("pk").eq(f"SESSION#{session_id}"),
            "ConsistentRead": True,
            "ProjectionExpression": "pk, sk, #type, seq, idempotencyKey, clientMessageId",
            "ExpressionAttributeNames": {"#type": "type"},
        }
        while True:
            page = guarded(lambda: self._table.query(**query))
            for raw in page.get("Items", []):
                item = from_dynamo(raw)
                if item["sk"] == META:
                    continue
                contents.keys.append({"pk": item["pk"], "sk": item["sk"]})
                kind = str(item.get("type") or str(item["sk"]).split("#", 1)[0].lower())
                contents.counts[kind] = contents.counts.get(kind, 0) + 1
                if item.get("idempotencyKey"):
                    contents.idempotency_keys.append(str(item["idempotencyKey"]))
                if item.get("clientMessageId"):
                    contents.client_message_ids.append(str(item["clientMessageId"]))
                if kind == "draft":
                    contents.draft_seqs.append(int(item["seq"]))
            last = page.get("LastEvaluatedKey")
            if not last:
                return contents
            query["ExclusiveStartKey"] = last

    def delete_contents(self, contents: SessionContents) -> int:
        return batch_delete(self._table_name, contents.keys, sleep=self._sleep)

    def delete_session_record(self, session_id: str) -> None:
        """The session item, last; only while it is marked, so nothing else can be removed here."""
        try:
            guarded(
                lambda: self._table.delete_item(
                    Key=session_key(session_id), ConditionExpression="attribute_exists(deletingAt)"
                )
            )
        except ConditionFailed:
            return  # already gone: a concurrent DELETE finished first

    # -- helpers ------------------------------------------------------------------------------

    def _put(self, item: dict[str, Any]) -> dict[str, Any]:
        return {
            "Put": {
                "TableName": self._table_name,
                "Item": without_none(item),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }
