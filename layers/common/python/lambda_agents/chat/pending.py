"""Chat turns answered after the request: what the worker is sent, and what the client is told.

A real model writes 35-80 tokens/s, so a 1,200-token answer takes 20 s at gpt-4o's typical pace
and a minute in a slow hour; API Gateway ends a buffered request at 29 s, and Python's managed
Lambda runtime cannot stream a response. A turn whose whole answer does not fit in the request's
time (at the model's learned pace) is therefore *accepted*: the user's message is stored, the turn
goes to the worker (ChatAnswerFunction) through a queue, and the client gets 202 with the answer's
location, where it reads the answer when it is ready. The answer is stored exactly once (the
worker's write is conditional on the answer's seq), whichever path made it.

What the chat shares with the interview's turns answered later (the decision, the 202, the
message's contract, the worker's settle policy) is ``lambda_agents.answered_later``; this module
holds the chat's own: the message's ids (the user's message seq; its answer is the next seq) and
where the answer is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import Field

from ..answered_later import AcceptedTurn, WorkerMessage, WorkerQueue
from ..errors import DomainError
from .requests import SESSION_ID_MAX_CHARS, SESSION_ID_PATTERN


class PendingTurn(WorkerMessage):
    """The worker's message: whose turn, in which session, answering which user message."""

    session_id: str = Field(alias="sessionId", pattern=SESSION_ID_PATTERN, max_length=SESSION_ID_MAX_CHARS)
    user_seq: int = Field(alias="userSeq", ge=1)


AnswerQueue = WorkerQueue[PendingTurn]


class MessageNotFound(DomainError):
    """No answer of that seq in the caller's session (nor a turn waiting for one)."""

    status = 404
    code = "MESSAGE_NOT_FOUND"


@dataclass(frozen=True)
class TurnAccepted(AcceptedTurn):
    """The turn is the worker's: the client reads its answer at ``path``, the answer's seq."""

    session_id: str
    user_seq: int
    expected_s: float
    url_field: ClassVar[str] = "answerUrl"

    @property
    def answer_seq(self) -> int:
        return self.user_seq + 1

    def path(self) -> str:
        return f"/ai-agent/sessions/{self.session_id}/messages/{self.answer_seq}"

    def ids(self) -> dict[str, Any]:
        return {"sessionId": self.session_id, "messageSeq": self.user_seq, "answerSeq": self.answer_seq}
