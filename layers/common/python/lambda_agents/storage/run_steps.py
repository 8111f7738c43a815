"""DynamoDB adapter for the interview's RunSteps (InterviewsTable; docs/interview.md#run-steps):
``pk=RUNSTEPS#<id>, sk=<turnId>#<seq:03d>``: tool name, input, output, duration; under its own
partition key, so loading a session never reads its audit trail. RunSteps expire after
``RUN_STEP_TTL_DAYS`` (7 by default), far sooner than the interview: they are audit records of tool
calls, while the facts belong to the interview.

They are written at once, before and after each tool execution, outside the turn's transaction:
they describe what ran, also for a turn whose state write later conflicts or fails, or that its
request handed to the worker; the worker's run of the same turn id numbers its steps after them
(``last_seq``), so each step is written once and none is lost.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from boto3.dynamodb.conditions import Key

from ..interview.rules.run_steps import RunStep
from .dynamodb import ConditionFailed, from_dynamo, guarded, table, to_dynamo
from .interviews import DEFAULT_RUN_STEP_TTL_DAYS, MAX_QUERY_PAGES, checked


class DynamoRunStepRecorder:
    """RunStep records, saved before and after each tool execution (docs/engine.md#run-steps); kept ``ttl_days``."""

    def __init__(
        self, table_name: str, ttl_days: int = DEFAULT_RUN_STEP_TTL_DAYS, clock: Callable[[], float] = time.time
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
        stored = checked(item)
        guarded(lambda: self._table.put_item(Item=stored, ConditionExpression="attribute_not_exists(pk)"))

    def finished(self, step: RunStep) -> None:
        """The step's result, on the step recorded as started. A step deleted meanwhile (its
        interview withdrawn while the tool ran) is not written back: an update would recreate it
        without its TTL, holding the tool's output for ever."""
        output = to_dynamo(step.output or {})
        with contextlib.suppress(ConditionFailed):
            guarded(
                lambda: self._table.update_item(
                    Key=self.key(step),
                    UpdateExpression="SET #output = :output, durationMs = :duration, #status = :finished",
                    ConditionExpression="attribute_exists(pk)",
                    ExpressionAttributeNames={"#output": "output", "#status": "status"},
                    ExpressionAttributeValues={
                        ":output": output,
                        ":duration": step.duration_ms or 0,
                        ":finished": "finished",
                    },
                )
            )

    def last_seq(self, session_id: str, turn_id: str) -> int:
        """The highest seq recorded for the turn (0 for none): one strongly consistent read of one key."""
        page = guarded(
            lambda: self._table.query(
                KeyConditionExpression=Key("pk").eq(f"RUNSTEPS#{session_id}") & Key("sk").begins_with(f"{turn_id}#"),
                ScanIndexForward=False,
                Limit=1,
                ConsistentRead=True,
                ProjectionExpression="sk",
            )
        )
        items = page.get("Items", [])
        return int(str(items[0]["sk"]).rsplit("#", 1)[1]) if items else 0

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
