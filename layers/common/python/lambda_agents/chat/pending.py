"""Chat turns answered after the request: what the worker is sent, and what the client is told.

A real model writes 35-80 tokens/s, so a 1,200-token answer takes 20 s at gpt-4o's typical pace
and a minute in a slow hour; API Gateway ends a buffered request at 29 s, and Python's managed
Lambda runtime cannot stream a response. A turn whose whole answer does not fit in the request's
time (at the model's learned pace) is therefore *accepted*: the user's message is stored, the turn
goes to the worker (ChatAnswerFunction) through a queue, and the client gets 202 with the answer's
location, where it reads the answer when it is ready. The answer is stored exactly once (the
worker's write is conditional on the answer's seq), whichever path made it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ..errors import DomainError
from .requests import SESSION_ID_MAX_CHARS, SESSION_ID_PATTERN

MIN_RETRY_AFTER_S = 1
MAX_RETRY_AFTER_S = 10


class PendingTurn(BaseModel):
    """The worker's message: whose turn, in which session, answering which user message."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    session_id: str = Field(alias="sessionId", pattern=SESSION_ID_PATTERN, max_length=SESSION_ID_MAX_CHARS)
    user_id: str = Field(alias="userId", min_length=1, max_length=128)
    user_seq: int = Field(alias="userSeq", ge=1)

    def as_message(self) -> str:
        return self.model_dump_json(by_alias=True)


class AnswerQueue(Protocol):
    def send(self, turn: PendingTurn) -> None:
        """Hand the turn to the worker; raises when the queue did not take it."""
        ...


class MessageNotFound(DomainError):
    """No answer of that seq in the caller's session (nor a turn waiting for one)."""

    status = 404
    code = "MESSAGE_NOT_FOUND"


def answer_path(session_id: str, answer_seq: int) -> str:
    """The answer's route; the 202 puts the stage or base path the request came through before it
    (``api.now_or_later``), so the client's URL resolves on the execute-api URL and a custom domain alike."""
    return f"/ai-agent/sessions/{session_id}/messages/{answer_seq}"


@dataclass(frozen=True)
class TurnAccepted:
    """The turn is the worker's: the client reads its answer at ``answer_path``."""

    session_id: str
    user_seq: int
    expected_s: float

    @property
    def answer_seq(self) -> int:
        return self.user_seq + 1

    @property
    def retry_after_s(self) -> int:
        """When to look first: the answer's expected time, polled at least every 10 s."""
        return max(MIN_RETRY_AFTER_S, min(MAX_RETRY_AFTER_S, math.ceil(self.expected_s)))

    def as_response(self) -> dict[str, Any]:
        return {
            "status": "pending",
            "sessionId": self.session_id,
            "messageSeq": self.user_seq,
            "answerSeq": self.answer_seq,
            "answerUrl": answer_path(self.session_id, self.answer_seq),
            "retryAfterSeconds": self.retry_after_s,
            "expectedSeconds": math.ceil(self.expected_s),
        }
