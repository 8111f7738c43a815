"""SQS for the functions: the scheduler's generation jobs (``SqsNudgeJobQueue``), a request's turn
handed to its worker (``QueueSender``), and, inside a consumer, a message that must come back later
than the queue's visibility timeout would bring it (a user whose plan could not be made in this
invocation, a 429's Retry-After) with its own visibility (``QueueMessages``). Only storage imports boto3."""

from __future__ import annotations

import json
import threading
from functools import lru_cache
from typing import Any, Protocol

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from ..observability import logger
from .dynamodb import StorageError

MAX_VISIBILITY_S = 43_200  # SQS's limit: 12 hours

_CREATION = threading.Lock()


@lru_cache(maxsize=1)
def sqs_client() -> Any:
    with _CREATION:
        return boto3.client("sqs")


class OutgoingMessage(Protocol):
    def as_message(self) -> str: ...


class QueueSender:
    """One queue's sender (an ``answered_later.WorkerQueue``): the chat's AnswerQueue
    (``chat.pending``: pending turns for ChatAnswerFunction) and the interview's TurnQueue
    (``interview.pending_turns``: turns for InterviewTurnFunction) are each one of these."""

    def __init__(self, queue_url: str) -> None:
        self._queue_url = queue_url
        self._client = sqs_client()

    def send(self, message: OutgoingMessage) -> None:
        self._client.send_message(QueueUrl=self._queue_url, MessageBody=message.as_message())


class QueueMessages:
    """The messages a consumer received from one queue."""

    def __init__(self, queue_url: str) -> None:
        self._queue_url = queue_url
        self._client = sqs_client()

    def return_after(self, receipt_handle: str, seconds: float) -> bool:
        """Make the message visible again in ``seconds`` (not the queue's whole visibility
        timeout). False when SQS refused (the message then returns when its visibility runs out):
        a failed record comes back either way, only later."""
        visibility = max(0, min(MAX_VISIBILITY_S, round(seconds)))
        try:
            self._client.change_message_visibility(
                QueueUrl=self._queue_url, ReceiptHandle=receipt_handle, VisibilityTimeout=visibility
            )
        except (ClientError, BotoCoreError) as error:
            logger.warning(
                "message visibility not changed; it returns after the queue's visibility timeout",
                extra={"error_type": type(error).__name__},
            )
            return False
        return True


class SqsNudgeJobQueue:
    """Sends generation jobs to the NudgeQueue, 10 per SendMessageBatch (the SQS maximum)."""

    BATCH = 10

    def __init__(self, queue_url: str, client: Any = None) -> None:
        self._url = queue_url
        self._client = client or sqs_client()

    def send(self, jobs: list[dict[str, str]]) -> int:
        sent = 0
        for start in range(0, len(jobs), self.BATCH):
            chunk = jobs[start : start + self.BATCH]
            entries = [{"Id": str(i), "MessageBody": json.dumps(job)} for i, job in enumerate(chunk)]
            response = self._client.send_message_batch(QueueUrl=self._url, Entries=entries)
            failed = response.get("Failed") or []
            if failed:
                # One retry of just the failed entries; then the scheduler run fails loudly.
                retry = [entry for entry in entries if entry["Id"] in {f["Id"] for f in failed}]
                again = self._client.send_message_batch(QueueUrl=self._url, Entries=retry)
                if again.get("Failed"):
                    raise StorageError(f"SQS refused {len(again['Failed'])} nudge jobs: {again['Failed'][0]}")
            sent += len(chunk)
        return sent
