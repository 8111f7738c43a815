"""Judgments with their stage log, for audit (spec 004 session log). The agent's output is not
stored: only its SHA-256 and length, so the audit trail holds no user text."""

from __future__ import annotations

import hashlib
import time
import uuid
from typing import Any

from ..judge.models import Judgment
from .dynamodb import guarded, table, to_dynamo

RETENTION_DAYS = 90


class DynamoJudgmentStore:
    def __init__(self, table_name: str, clock: Any = time.time) -> None:
        self._table = table(table_name)
        self._clock = clock

    def save(self, judgment: Judgment, output: str) -> str:
        now = self._clock()
        judgment_id = uuid.uuid4().hex
        item = {
            "pk": f"MOVEMENT#{judgment.movement}",
            "sk": f"{int(now * 1000):015d}#{judgment_id}",
            "judgmentId": judgment_id,
            **judgment.as_response(),
            "outputSha256": hashlib.sha256(output.encode("utf-8")).hexdigest(),
            "outputChars": len(output),
            "createdAt": int(now),
            "expiresAt": int(now) + RETENTION_DAYS * 86400,
        }
        guarded(lambda: self._table.put_item(Item=to_dynamo(item), ConditionExpression="attribute_not_exists(pk)"))
        return judgment_id
