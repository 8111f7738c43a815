"""What the workers that finish a request's turn after it (ChatAnswerFunction, InterviewTurnFunction)
do alike with their SQS batches.

- Each record is worked on its own; one that fails is reported as a partial batch failure
  (Powertools' ``BatchProcessor``) and SQS delivers it again, while the rest of the batch is done.
- A record's last delivery (the queue's maxReceiveCount, which the function is told) must not fail:
  the dead-letter queue would keep a turn someone is waiting for. There the work's failure is
  settled instead (a fallback answer stored, a failure the client reads), so every turn ends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from .observability import logger, metrics


def is_last_delivery(record: SQSRecord, max_receive_count: int) -> bool:
    return int(record.attributes.approximate_receive_count or 1) >= max_receive_count


def fail_unless_last_delivery(error: Exception, *, last_delivery: bool, what: str, settled_as: str = "") -> None:
    """Called where the work of a record raised ``error``: logs it and raises it again, so the
    record fails and is delivered again, except on its last delivery, where it returns and the
    caller settles the work instead. ``what`` names the work in the log line, ``settled_as`` how
    a last delivery's failure ends (e.g. ": the fallback answer")."""
    extra = {"error_type": type(error).__name__}
    if not last_delivery:
        logger.exception(f"{what} failed; redelivered", extra=extra)
        raise error
    logger.exception(f"{what} failed on its last delivery{settled_as}", extra=extra)


def process_records(
    event: dict[str, Any], context: LambdaContext, handle: Callable[[SQSRecord], None], records_metric: str
) -> dict[str, Any]:
    """Every record of the batch through ``handle``, counted as ``records_metric``; the answer
    names the records that failed, for SQS to deliver again."""
    metrics.add_metric(name=records_metric, unit=MetricUnit.Count, value=len(event.get("Records") or []))
    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    return dict(process_partial_response(event=event, record_handler=handle, processor=processor, context=context))
