"""Judgments with their stage log, for audit (docs/judge.md#stored-judgments), and the runs where no stage
matched a rule, with theirs: the audit answers "why did the workflow stop" too. The agent's output
is not stored: only its SHA-256 and length, so the audit trail holds no user text."""

from __future__ import annotations

import hashlib
import time
import uuid
from typing import Any

from ..judge.models import Judgment, StageLog
from .dynamodb import guarded, table, to_dynamo

RETENTION_DAYS = 90


class DynamoJudgmentStore:
    def __init__(self, table_name: str, clock: Any = time.time) -> None:
        self._table = table(table_name)
        self._clock = clock

    def save(self, judgment: Judgment, output: str) -> str:
        return self._put(judgment.movement, {"status": "matched", **judgment.as_response()}, output)

    def save_failure(
        self,
        movement: str,
        stages: list[StageLog],
        reason: str,
        output: str,
        account: dict[str, Any] | None = None,
    ) -> str:
        """A run where no stage matched; ``reason`` is the stable error name (``JudgmentFailed``...);
        ``account``: what its calls were billed (``ModelAccount.as_dict``), None when none was made."""
        record = {
            "status": "failed",
            "movement": movement,
            "error": reason,
            "stages": [stage.model_dump(by_alias=True, mode="json") for stage in stages],
            "account": account,
        }
        return self._put(movement, record, output)

    def _put(self, movement: str, record: dict[str, Any], output: str) -> str:
        now = self._clock()
        judgment_id = uuid.uuid4().hex
        item = {
            "pk": f"MOVEMENT#{movement}",
            "sk": f"{int(now * 1000):015d}#{judgment_id}",
            "judgmentId": judgment_id,
            **record,
            "outputSha256": hashlib.sha256(output.encode("utf-8")).hexdigest(),
            "outputChars": len(output),
            "createdAt": int(now),
            "expiresAt": int(now) + RETENTION_DAYS * 86400,
        }
        guarded(lambda: self._table.put_item(Item=to_dynamo(item), ConditionExpression="attribute_not_exists(pk)"))
        return judgment_id
