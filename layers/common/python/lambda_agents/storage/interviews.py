"""DynamoDB adapter for interviews (InterviewsTable) and their RunSteps.

Item design (one table):
- session ``pk=SESSION#<id>, sk=SESSION``: owner, state (one map), ``version``, messageCount,
  usageTotal, status, timestamps, ``expiresAt`` (TTL);
- job ``pk=SESSION#<id>, sk=JOB``: the job's field definitions, written once with the session;
  kept apart so the item rewritten every turn holds only the state;
- message ``pk=SESSION#<id>, sk=MSG#<seq:05d>``: role, content, agent, data (additionalData);
- RunStep ``pk=RUNSTEPS#<id>, sk=<turnId>#<seq:03d>``: tool name, input, output, duration; under
  its own partition key, so loading a session never reads its audit trail.

A turn is ONE TransactWriteItems: the session item put on condition ``version = :expected``
and each new message put on ``attribute_not_exists``. A concurrent turn that lost the race is
refused whole (``VersionConflict``): nothing of it is written. A turn writes 1 + 2 items, far
from the 100-item limit; the bounds in ``interview/models.py`` keep the session item under
DynamoDB's 400 KB, and a write that would pass it is refused before it is sent.

RunSteps are written at once, before and after each tool execution, outside the transaction:
they describe what ran, also for a turn whose state write later conflicts or fails.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from boto3.dynamodb.conditions import Key

from ..interview.errors import VersionConflict
from ..interview.models import ChatMessage, InterviewSession, InterviewState, JobDefinition
from ..interview.repository import StoredInterview, TurnCommit
from ..interview.run_steps import RunStep
from .dynamodb import (
    ConditionFailed,
    StorageError,
    from_dynamo,
    guarded,
    table,
    to_dynamo,
    transact_write,
)

SESSION_SK = "SESSION"
JOB_SK = "JOB"
MAX_ITEM_BYTES = 380_000  # DynamoDB's limit is 400 KB: keep a margin for attribute names
MAX_QUERY_PAGES = 50
DEFAULT_TTL_DAYS = 90


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
    return {
        "pk": session_pk(session.session_id),
        "sk": SESSION_SK,
        "type": "interview",
        "sessionId": session.session_id,
        "userId": session.user_id,
        "jobId": session.job.job_id,
        "state": state.model_dump(mode="json"),
        "status": state.status.value,
        "currentAgent": state.current_agent.value if state.current_agent else None,
        "version": session.version,
        "messageCount": session.message_count,
        "usageTotal": dict(session.usage_total),
        "createdAt": session.created_at,
        "updatedAt": session.updated_at,
        "expiresAt": _expires_at(session.created_at, ttl_days),
    }


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


def _checked(item: dict[str, Any]) -> dict[str, Any]:
    size = len(json.dumps(item, ensure_ascii=False, default=str).encode("utf-8"))
    if size > MAX_ITEM_BYTES:
        raise ItemTooLarge(f"item {item['pk']} / {item['sk']} would be {size} bytes (limit {MAX_ITEM_BYTES})")
    stored: dict[str, Any] = to_dynamo({key: value for key, value in item.items() if value is not None})
    return stored


class DynamoInterviewRepository:
    def __init__(self, table_name: str, ttl_days: int = DEFAULT_TTL_DAYS) -> None:
        self._table_name = table_name
        self._table = table(table_name)
        self._ttl_days = ttl_days

    def create(self, session: InterviewSession) -> None:
        transaction = [
            {
                "Put": {
                    "TableName": self._table_name,
                    "Item": _checked(item),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
            for item in (session_item(session, self._ttl_days), job_item(session, self._ttl_days))
        ]
        transact_write(transaction)

    def load(self, session_id: str) -> StoredInterview | None:
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": Key("pk").eq(session_pk(session_id)),
            "ConsistentRead": True,
        }
        for _ in range(MAX_QUERY_PAGES):
            page = guarded(lambda: self._table.query(**kwargs))
            items += [from_dynamo(item) for item in page.get("Items", [])]
            last = page.get("LastEvaluatedKey")
            if not last:
                break
            kwargs["ExclusiveStartKey"] = last
        else:
            raise StorageError(f"interview {session_id}: more than {MAX_QUERY_PAGES} pages of items")
        by_sk = {item["sk"]: item for item in items}
        head, job = by_sk.get(SESSION_SK), by_sk.get(JOB_SK)
        if head is None or job is None:
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
        return StoredInterview(session, messages)

    def commit_turn(self, commit: TurnCommit) -> None:
        session = commit.session
        transaction: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self._table_name,
                    "Item": _checked(session_item(session, self._ttl_days)),
                    "ConditionExpression": "version = :expected AND userId = :user",
                    "ExpressionAttributeValues": {":expected": commit.expected_version, ":user": session.user_id},
                }
            }
        ]
        transaction += [
            {
                "Put": {
                    "TableName": self._table_name,
                    "Item": _checked(message_item(session, message, self._ttl_days)),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
            for message in commit.messages
        ]
        try:
            transact_write(transaction)
        except ConditionFailed as error:
            raise VersionConflict(
                f"interview {session.session_id}: version {commit.expected_version} is no longer current"
            ) from error


class DynamoRunStepRecorder:
    """RunStep records, saved before and after each tool execution (002 §5)."""

    def __init__(
        self, table_name: str, ttl_days: int = DEFAULT_TTL_DAYS, clock: Callable[[], float] = time.time
    ) -> None:
        self._table = table(table_name)
        self._ttl_days = ttl_days
        self._clock = clock

    @staticmethod
    def key(step: RunStep) -> dict[str, str]:
        return {"pk": f"RUNSTEPS#{step.session_id}", "sk": f"{step.turn_id}#{step.seq:03d}"}

    def started(self, step: RunStep) -> None:
        item = {
            **self.key(step),
            "type": "run_step",
            "sessionId": step.session_id,
            "turnId": step.turn_id,
            "seq": step.seq,
            "agent": step.agent,
            "toolName": step.tool_name,
            "input": step.input,
            "status": "started",
            "startedAt": step.started_at,
            "expiresAt": int(self._clock()) + self._ttl_days * 86400,
        }
        stored = _checked(item)
        guarded(lambda: self._table.put_item(Item=stored, ConditionExpression="attribute_not_exists(pk)"))

    def finished(self, step: RunStep) -> None:
        output = to_dynamo(step.output or {})
        guarded(
            lambda: self._table.update_item(
                Key=self.key(step),
                UpdateExpression="SET #output = :output, durationMs = :duration, #status = :finished",
                ExpressionAttributeNames={"#output": "output", "#status": "status"},
                ExpressionAttributeValues={
                    ":output": output,
                    ":duration": step.duration_ms or 0,
                    ":finished": "finished",
                },
            )
        )

    def for_session(self, session_id: str) -> list[dict[str, Any]]:
        """Every RunStep of a session, in turn and step order (audit reads, tests)."""
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"KeyConditionExpression": Key("pk").eq(f"RUNSTEPS#{session_id}")}
        for _ in range(MAX_QUERY_PAGES):
            page = guarded(lambda: self._table.query(**kwargs))
            items += [from_dynamo(item) for item in page.get("Items", [])]
            if not page.get("LastEvaluatedKey"):
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return items
