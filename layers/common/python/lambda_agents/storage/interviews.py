"""DynamoDB adapter for interviews (InterviewsTable) and the writes of the outbox of application
events; the indexes' reads are ``storage.interview_listings``, the RunSteps ``storage.run_steps``.

Item design (one table; jobs are in ``storage/jobs.py``):
- session ``pk=SESSION#<id>, sk=SESSION``: owner, state (one map), ``version``, messageCount,
  usageTotal, status, timestamps, ``expiresAt`` (TTL); once the applicant consented it also
  carries ``applicationJobId`` / ``applicationSort`` (``<createdAt>#<id>``), the keys of the
  sparse ``JobApplicationsIndex`` the employer lists a job's applications from; and
  ``applicantId`` (the owner) / ``applicantSort`` (``<createdAt>#<id>``), the keys of the sparse
  ``ApplicantInterviewsIndex`` the applicant lists their own interviews from (with ``jobTitle``);
- job ``pk=SESSION#<id>, sk=JOB``: the job version's field definitions, written once with the
  session; kept apart so the item rewritten every turn holds only the state;
- message ``pk=SESSION#<id>, sk=MSG#<seq:05d>``: role, content, agent, data (additionalData);
- retry record ``pk=SESSION#<id>, sk=IDEM#<record id>``: the id of the Powertools idempotency
  record a turn's answer is kept under (written with the turn, or with the mark of a turn handed
  to the worker, whose 202 is kept from then on), so a withdrawal deletes it;
- RunSteps under ``pk=RUNSTEPS#<id>`` (``storage.run_steps``);
- outbox ``pk=APPLICATION_EVENTS, ...``: an application event written in the transaction of
  the change it announces; read and deleted by ``storage/application_outbox.py``.

The session's first write checks, in the same transaction, that its job is open: a job closed
meanwhile starts no interview.

A turn is ONE TransactWriteItems: the session item put on condition ``version = :expected``
and each new message put on ``attribute_not_exists``. A concurrent turn that lost the race is
refused whole (``VersionConflict``): nothing of it is written. A turn writes 1 + 2 items, far
from the 100-item limit; the bounds in ``interview/rules/models.py`` keep the session item under
DynamoDB's 400 KB, and a write that would pass it is refused before it is sent.

Withdrawal deletes everything above that belongs to the session: the head is marked first
(``withdrawnAt``, version bumped: a turn in flight can no longer commit, readers see nothing;
both indexes' keys removed, so neither the employer's nor the applicant's list shows it), then
the retry records, outbox entries, RunSteps and items are deleted, the head last, so a retried
withdrawal finishes what a failed one began. RunSteps that a turn still in flight writes
after the deletion expire with their short TTL.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from boto3.dynamodb.conditions import Key

from ..interview.catalog.my_interviews import InterviewPosition
from ..interview.errors import JobClosed, VersionConflict
from ..interview.pending_turns import PENDING_TURN_STALE_S, PendingTurn
from ..interview.repository import StoredInterview, TurnCommit, Withdrawal
from ..interview.rules.application_events import ApplicationEvent
from ..interview.rules.models import (
    ChatMessage,
    InterviewSession,
    InterviewState,
    JobDefinition,
)
from .application_outbox import OUTBOX_PK, event_of, outbox_item
from .dynamodb import (
    ConditionFailed,
    StorageError,
    from_dynamo,
    guarded,
    table,
    to_dynamo,
    transact_write,
)
from .jobs import job_head_key

SESSION_SK = "SESSION"
JOB_SK = "JOB"
IDEMPOTENCY_PREFIX = "IDEM#"
TURN_PREFIX = "TURN#"  # what a turn handed to the worker came to: its reply, or its failure
APPLICATIONS_INDEX = "JobApplicationsIndex"
APPLICANT_INDEX = "ApplicantInterviewsIndex"
MAX_ITEM_BYTES = 380_000  # DynamoDB's limit is 400 KB: keep a margin for attribute names
MAX_QUERY_PAGES = 50
DEFAULT_TTL_DAYS = 90
DEFAULT_RUN_STEP_TTL_DAYS = 7


class ItemTooLarge(StorageError):
    """An item would pass DynamoDB's 400 KB limit; it is refused before it is sent."""


def session_pk(session_id: str) -> str:
    return f"SESSION#{session_id}"


def message_sk(seq: int) -> str:
    return f"MSG#{seq:05d}"


def _expires_at(created_at: str, ttl_days: int) -> int:
    return int(datetime.fromisoformat(created_at).timestamp()) + ttl_days * 86400


def session_item(session: InterviewSession, ttl_days: int) -> dict[str, Any]:
    state = session.state
    item = {
        "pk": session_pk(session.session_id),
        "sk": SESSION_SK,
        "type": "interview",
        "sessionId": session.session_id,
        "userId": session.user_id,
        "jobId": session.job.job_id,
        "jobVersion": session.job.version,
        "jobTitle": session.job.title or None,
        "state": state.model_dump(mode="json"),
        "status": state.status.value,
        "currentAgent": state.current_agent.value if state.current_agent else None,
        "version": session.version,
        "messageCount": session.message_count,
        "usageTotal": dict(session.usage_total),
        "createdAt": session.created_at,
        "updatedAt": session.updated_at,
        "expiresAt": _expires_at(session.created_at, ttl_days),
        "applicantId": session.user_id,
        "applicantSort": applicant_sort(InterviewPosition(session.created_at, session.session_id)),
    }
    if state.consent is not None:  # the employer's index holds consented applications only
        item["applicationJobId"] = session.job.job_id
        item["applicationSort"] = f"{session.created_at}#{session.session_id}"
        item["consentedAt"] = state.consent.accepted_at
    return item


def applicant_sort(position: InterviewPosition) -> str:
    return f"{position.created_at}#{position.session_id}"


def job_item(session: InterviewSession, ttl_days: int) -> dict[str, Any]:
    return {
        "pk": session_pk(session.session_id),
        "sk": JOB_SK,
        "type": "job",
        "job": session.job.model_dump(mode="json"),
        "expiresAt": _expires_at(session.created_at, ttl_days),
    }


def message_item(session: InterviewSession, message: ChatMessage, ttl_days: int) -> dict[str, Any]:
    return {
        "pk": session_pk(session.session_id),
        "sk": message_sk(message.seq),
        "type": "message",
        "seq": message.seq,
        "role": message.role,
        "content": message.content,
        "agent": message.agent,
        "data": message.data,
        "createdAt": message.created_at,
        "expiresAt": _expires_at(session.created_at, ttl_days),
    }


def checked(item: dict[str, Any]) -> dict[str, Any]:
    size = len(json.dumps(item, ensure_ascii=False, default=str).encode("utf-8"))
    if size > MAX_ITEM_BYTES:
        raise ItemTooLarge(f"item {item['pk']} / {item['sk']} would be {size} bytes (limit {MAX_ITEM_BYTES})")
    stored: dict[str, Any] = to_dynamo({key: value for key, value in item.items() if value is not None})
    return stored


class DynamoInterviewRepository:
    def __init__(
        self,
        table_name: str,
        ttl_days: int = DEFAULT_TTL_DAYS,
        *,
        idempotency_table: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._table_name = table_name
        self._table = table(table_name)
        self._ttl_days = ttl_days
        self._idempotency_table = idempotency_table
        self._clock = clock

    def create(self, session: InterviewSession) -> None:
        transaction: list[dict[str, Any]] = [
            {
                "ConditionCheck": {
                    "TableName": self._table_name,
                    "Key": job_head_key(session.job.job_id),
                    "ConditionExpression": "#status = :open",
                    "ExpressionAttributeNames": {"#status": "status"},
                    "ExpressionAttributeValues": {":open": "open"},
                }
            }
        ]
        transaction += [
            {
                "Put": {
                    "TableName": self._table_name,
                    "Item": checked(item),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
            for item in (session_item(session, self._ttl_days), job_item(session, self._ttl_days))
        ]
        try:
            transact_write(transaction)
        except ConditionFailed:
            raise JobClosed(f"job {session.job.job_id!r} was closed: it starts no new interview") from None

    def load(self, session_id: str) -> StoredInterview | None:
        by_sk = {item["sk"]: item for item in self._partition(session_pk(session_id))}
        head, job = by_sk.get(SESSION_SK), by_sk.get(JOB_SK)
        if head is None or job is None or "withdrawnAt" in head:
            return None
        session = InterviewSession(
            session_id=head["sessionId"],
            user_id=head["userId"],
            job=JobDefinition.model_validate(job["job"]),
            state=InterviewState.model_validate(head["state"]),
            version=head["version"],
            message_count=head["messageCount"],
            usage_total=head.get("usageTotal", {}),
            created_at=head["createdAt"],
            updated_at=head["updatedAt"],
        )
        messages = [
            ChatMessage(
                seq=item["seq"],
                role=item["role"],
                content=item["content"],
                agent=item.get("agent"),
                created_at=item["createdAt"],
                data=item.get("data", {}),
            )
            for sk, item in sorted(by_sk.items())
            if sk.startswith("MSG#")
        ]
        pending = head.get("pendingTurn")
        return StoredInterview(session, messages, None if pending is None else PendingTurn.model_validate(pending))

    def mark_pending(self, session_id: str, user_id: str, expected_version: int, pending: PendingTurn) -> None:
        """The mark, and with it the turn's retry record id (``IDEM#``): the request's answer (the
        202) is kept under it from now on, whatever becomes of the turn (run, given up, or still
        running), so a withdrawal finds it."""
        transaction: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self._table_name,
                    "Key": {"pk": session_pk(session_id), "sk": SESSION_SK},
                    "UpdateExpression": "SET pendingTurn = :pending",
                    "ConditionExpression": "version = :expected AND userId = :user "
                    "AND attribute_not_exists(withdrawnAt) "
                    "AND (attribute_not_exists(pendingTurn) OR pendingTurn.since < :stale)",
                    "ExpressionAttributeValues": to_dynamo(
                        {
                            ":pending": pending.model_dump(by_alias=True, exclude_none=True),
                            ":expected": expected_version,
                            ":user": user_id,
                            ":stale": self._stale_before(),
                        }
                    ),
                }
            }
        ]
        if pending.idempotency_record is not None:
            expires_at = int(self._clock()) + self._ttl_days * 86_400
            record = self._retry_record_item(session_id, pending.idempotency_record, expires_at)
            transaction.append({"Put": {"TableName": self._table_name, "Item": record}})
        try:
            transact_write(transaction)
        except ConditionFailed as error:
            raise VersionConflict(f"interview {session_id}: changed, or another turn is pending") from error

    def release_pending(self, session_id: str, turn_id: str, failure: dict[str, Any] | None) -> None:
        transaction: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self._table_name,
                    "Key": {"pk": session_pk(session_id), "sk": SESSION_SK},
                    "UpdateExpression": "REMOVE pendingTurn",
                    "ConditionExpression": "pendingTurn.turnId = :turn",
                    "ExpressionAttributeValues": {":turn": turn_id},
                }
            }
        ]
        if failure is not None:
            transaction.append(
                {"Put": {"TableName": self._table_name, "Item": self._turn_item(session_id, turn_id, failure)}}
            )
        with contextlib.suppress(ConditionFailed):  # lifted already, or committed meanwhile: nothing to release
            transact_write(transaction)

    def turn_record(self, session_id: str, turn_id: str) -> dict[str, Any] | None:
        item = guarded(
            lambda: self._table.get_item(
                Key={"pk": session_pk(session_id), "sk": TURN_PREFIX + turn_id}, ConsistentRead=True
            )
        ).get("Item")
        return None if item is None else dict(from_dynamo(item)["outcome"])

    def _turn_item(self, session_id: str, turn_id: str, outcome: dict[str, Any]) -> dict[str, Any]:
        item: dict[str, Any] = to_dynamo(
            {
                "pk": session_pk(session_id),
                "sk": TURN_PREFIX + turn_id,
                "type": "turn",
                "outcome": outcome,
                "expiresAt": int(self._clock()) + self._ttl_days * 86_400,
            }
        )
        return item

    @staticmethod
    def _retry_record_item(session_id: str, record_id: str, expires_at: int) -> dict[str, Any]:
        return {
            "pk": session_pk(session_id),
            "sk": IDEMPOTENCY_PREFIX + record_id,
            "type": "retry_record",
            "recordId": record_id,
            "expiresAt": expires_at,
        }

    def _stale_before(self) -> str:
        """Marks older than this are a worker that died without lifting its own."""
        return datetime.fromtimestamp(self._clock() - PENDING_TURN_STALE_S, UTC).isoformat()

    def _partition(self, pk: str, sk_prefix: str | None = None) -> list[dict[str, Any]]:
        """Every item of a partition (or of its sort keys starting with ``sk_prefix``), bounded."""
        items: list[dict[str, Any]] = []
        key = Key("pk").eq(pk)
        if sk_prefix is not None:
            key = key & Key("sk").begins_with(sk_prefix)
        kwargs: dict[str, Any] = {"KeyConditionExpression": key, "ConsistentRead": True}
        for _ in range(MAX_QUERY_PAGES):
            page = guarded(lambda: self._table.query(**kwargs))
            items += [from_dynamo(item) for item in page.get("Items", [])]
            last = page.get("LastEvaluatedKey")
            if not last:
                return items
            kwargs["ExclusiveStartKey"] = last
        raise StorageError(f"{pk}: more than {MAX_QUERY_PAGES} pages of items")

    def commit_turn(self, commit: TurnCommit) -> None:
        session = commit.session
        values: dict[str, Any] = {":expected": commit.expected_version, ":user": session.user_id}
        condition = "version = :expected AND userId = :user"
        if commit.pending_turn_id is not None:
            condition += " AND pendingTurn.turnId = :turn"  # the worker commits only the turn it was given
            values[":turn"] = commit.pending_turn_id
        else:
            condition += " AND (attribute_not_exists(pendingTurn) OR pendingTurn.since < :stale)"
            values[":stale"] = self._stale_before()
        transaction: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self._table_name,
                    "Item": checked(session_item(session, self._ttl_days)),
                    "ConditionExpression": condition,
                    "ExpressionAttributeValues": values,
                }
            }
        ]
        transaction += [
            {
                "Put": {
                    "TableName": self._table_name,
                    "Item": checked(message_item(session, message, self._ttl_days)),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
            for message in commit.messages
        ]
        written_at = self._clock()
        transaction += [
            {"Put": {"TableName": self._table_name, "Item": to_dynamo(outbox_item(event, written_at))}}
            for event in commit.events
        ]
        if commit.idempotency_record is not None:
            expires_at = _expires_at(session.created_at, self._ttl_days)
            record = self._retry_record_item(session.session_id, commit.idempotency_record, expires_at)
            transaction.append({"Put": {"TableName": self._table_name, "Item": record}})
        if commit.answer is not None and commit.turn_id is not None:
            answer = self._turn_item(
                session.session_id, commit.turn_id, {"status": "answered", "answer": commit.answer}
            )
            transaction.append({"Put": {"TableName": self._table_name, "Item": answer}})
        try:
            transact_write(transaction)
        except ConditionFailed as error:
            raise VersionConflict(
                f"interview {session.session_id}: version {commit.expected_version} is no longer current"
            ) from error

    def withdraw(self, session_id: str, user_id: str, event: ApplicationEvent | None) -> Withdrawal:
        key = {"pk": session_pk(session_id), "sk": SESSION_SK}
        head = guarded(lambda: self._table.get_item(Key=key, ConsistentRead=True)).get("Item")
        if head is None or head.get("userId") != user_id:
            return Withdrawal(found=False)
        if "withdrawnAt" not in head:
            self._mark_withdrawn(session_id, user_id, event)
        session_items = [item for item in self._partition(session_pk(session_id)) if item["sk"] != SESSION_SK]
        for item in session_items:
            if item["sk"].startswith(IDEMPOTENCY_PREFIX):
                self._delete_retry_record(str(item["recordId"]))
        outbox = self._partition(OUTBOX_PK, sk_prefix=f"{session_id}#")
        # The withdrawal's own announcement stays until it is published (then deleted like any event).
        announce = tuple(event_of(item) for item in outbox if item["status"] == "withdrawn")
        doomed = [item for item in outbox if item["status"] != "withdrawn"]
        doomed += self._partition(f"RUNSTEPS#{session_id}")
        doomed += session_items
        self._delete_all([{"pk": item["pk"], "sk": item["sk"]} for item in doomed])
        guarded(lambda: self._table.delete_item(Key=key))
        return Withdrawal(found=True, to_announce=announce)

    def _mark_withdrawn(self, session_id: str, user_id: str, event: ApplicationEvent | None) -> None:
        transaction: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self._table_name,
                    "Key": {"pk": session_pk(session_id), "sk": SESSION_SK},
                    "UpdateExpression": "SET withdrawnAt = :at, version = version + :one "
                    "REMOVE applicationJobId, applicationSort, applicantId, applicantSort",
                    "ConditionExpression": "userId = :user AND attribute_not_exists(withdrawnAt)",
                    "ExpressionAttributeValues": {":at": int(self._clock()), ":one": 1, ":user": user_id},
                }
            }
        ]
        if event is not None:
            transaction.append(
                {"Put": {"TableName": self._table_name, "Item": to_dynamo(outbox_item(event, self._clock()))}}
            )
        with contextlib.suppress(ConditionFailed):  # another withdrawal of the same session marked it first
            transact_write(transaction)

    def _delete_retry_record(self, record_id: str) -> None:
        if self._idempotency_table is None:
            raise StorageError("the repository was built without the idempotency table: retry records stay")
        idempotency = table(self._idempotency_table)
        guarded(lambda: idempotency.delete_item(Key={"id": record_id}))

    def _delete_all(self, keys: list[dict[str, str]]) -> None:
        def run() -> None:
            with self._table.batch_writer() as batch:
                for item_key in keys:
                    batch.delete_item(Key=item_key)

        guarded(run)
