"""Chat turns answered after the request: what the worker is sent, and what the client is told.

A real model writes 35-80 tokens/s, so a 1,200-token answer takes 20 s at gpt-4o's typical pace
and a minute in a slow hour; API Gateway ends a buffered request at 29 s, and Python's managed
Lambda runtime cannot stream a response. A turn whose whole answer does not fit in the request's
time (at the model's learned pace) is therefore *accepted*: the user's message is stored, the turn
goes to the worker (ChatAnswerFunction) through a queue, and the client gets 202 with the answer's
location, where it reads the answer when it is ready. The answer is stored exactly once (the
worker's write is conditional on the answer's seq), whichever path made it.

What the chat shares with the interview's turns answered later (the decision, the 202, the
message's contract, the worker's delivery policy) is ``lambda_agents.answered_later``; this module
holds the chat's own: the message's ids (the user's message seq; its answer is the next seq), where
the answer is read, and how long an answer is expected to take.
"""

from __future__ import annotations

from pydantic import Field

from ..answered_later import TurnAccepted, TurnTimes, WorkerMessage, WorkerQueue
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


def answer_accepted(session_id: str, user_seq: int, expected_s: float) -> TurnAccepted:
    """The turn is the worker's: the client reads its answer at the answer's seq (the next one)."""
    answer_seq = user_seq + 1
    return TurnAccepted(
        path=f"/ai-agent/sessions/{session_id}/messages/{answer_seq}",
        url_field="answerUrl",
        ids={"sessionId": session_id, "messageSeq": user_seq, "answerSeq": answer_seq},
        expected_s=expected_s,
    )


def answer_times(max_tokens: int) -> TurnTimes:
    """How long an answer is expected to take: the whole ``max_tokens`` at the model's pace. An
    answer may be 50 tokens or 1,200, so the times of earlier ones do not say (no window)."""
    return TurnTimes(calls=1, call_tokens=max_tokens, window=0)
