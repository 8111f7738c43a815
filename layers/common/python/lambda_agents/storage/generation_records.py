"""The nudge generator's Powertools idempotency records (NudgeIdempotencyTable), as a deletion of a
user's nudge data sees them: their ids, whether a generation still holds one, and their removal.

Ids come from Powertools' own persistence layer configured as the generator configures it
(``nudges.generation_records``), never from a copy of its hashing. Whether a record is still held
mirrors the conditions under which Powertools would let a new run take it over: an ``INPROGRESS``
record whose in-progress expiry (the run's Lambda deadline) and expiry have not passed belongs to a
run under way, which will either store its outcome or delete the record when it ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from ..nudges.deletion import GenerationRecord
from ..nudges.generation_records import KEY_PREFIX, idempotency_config
from .dynamodb import batch_delete, batch_get, from_dynamo

IN_PROGRESS = "INPROGRESS"  # Powertools' status of a record whose run has not ended


class DynamoGenerationRecords:
    def __init__(self, table_name: str, sleep: Callable[[float], None] = time.sleep) -> None:
        self._table_name = table_name
        self._sleep = sleep
        self._persistence: Any = None

    def _layer(self) -> Any:
        if self._persistence is None:
            from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

            persistence = DynamoDBPersistenceLayer(table_name=self._table_name)
            persistence.configure(idempotency_config(), key_prefix=KEY_PREFIX)
            self._persistence = persistence
        return self._persistence

    def record_ids(self, user_id: str, local_dates: Sequence[str]) -> list[str]:
        layer = self._layer()
        ids = {layer._get_hashed_idempotency_key(data={"userId": user_id, "localDate": day}) for day in local_dates}
        return sorted(str(record_id) for record_id in ids)

    def stored(self, record_ids: Sequence[str], now: datetime) -> list[GenerationRecord]:
        """The records of ``record_ids`` that exist (read consistently), each saying whether a run
        still holds it."""
        layer = self._layer()
        keys = [{layer.key_attr: record_id} for record_id in record_ids]
        now_s = now.timestamp()
        records = []
        for raw in batch_get(self._table_name, keys, sleep=self._sleep):
            item = from_dynamo(raw)
            expiry = item.get(layer.expiry_attr)
            in_progress_until = item.get(layer.in_progress_expiry_attr)
            held = (
                item.get(layer.status_attr) == IN_PROGRESS
                and not (isinstance(expiry, int | float) and expiry < now_s)
                and not (isinstance(in_progress_until, int | float) and in_progress_until < now_s * 1000)
            )
            records.append(GenerationRecord(str(item[layer.key_attr]), held))
        return sorted(records, key=lambda record: record.record_id)

    def delete(self, record_ids: Sequence[str]) -> int:
        layer = self._layer()
        keys = [{layer.key_attr: record_id} for record_id in record_ids]
        return batch_delete(self._table_name, keys, sleep=self._sleep)
