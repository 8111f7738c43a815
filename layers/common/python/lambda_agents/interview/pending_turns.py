"""Interview turns answered after their request.

A turn makes several model calls (an agent's tool calls, a QuickCheck, a Reviewer): seven in the
greeting's second turn. At gpt-4o's typical pace that is ~8 s, in a slow hour ~20 s, and with a
reasoning model (10-40 s before each first token) minutes; API Gateway ends the request at 29 s.
A turn expected not to fit in the request's time (``TurnTimes``: how long this container's turns
took, or the model's pace times a typical turn's calls), one the client asks to be answered later
(``Prefer: respond-async``), and one the deadline cuts anyway are *accepted*: nothing of the turn
is committed, the session is marked (``PendingTurn``: a second turn meanwhile is 409
TURN_IN_PROGRESS), the turn goes to InterviewTurnFunction through a queue, and the client gets 202
with the turn's location, where it reads the reply once the worker has committed it, exactly as
the message route would have answered it. A worker that cannot run the turn on its last delivery
records the failure there (503 MODEL_UNAVAILABLE: send the message again) and lifts the mark.

What the interview shares with the chat's answers written later (the decision, the 202, the
message's contract, the worker's delivery policy) is ``lambda_agents.answered_later``; this module
holds the interview's own: the session's mark, the turn's id, where the reply is read, and how
long a turn is expected to take.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..answered_later import TurnAccepted, TurnTimes, WorkerMessage, WorkerQueue

TURN_ID_PATTERN = r"^[0-9]{13}-[0-9a-f]{8}$"
# A turn's model calls before this container has timed any: the agent's call, a QuickCheck and
# the call that asks, plus one more (a Reviewer, or the greeting's settings) at each call's usual size.
TURN_CALLS_PRIOR = 4
TURN_CALL_TOKENS = 256
PENDING_TURN_STALE_S = 15 * 60  # a mark older than this is a worker that died: it no longer blocks
TurnKind = Literal["message", "correction"]


class PendingTurn(BaseModel):
    """What the session's mark holds, and what the worker reads: the applicant's turn as sent."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    turn_id: str = Field(alias="turnId", pattern=TURN_ID_PATTERN)
    kind: TurnKind
    text: str
    field_id: str | None = Field(default=None, alias="fieldId")
    idempotency_record: str | None = Field(default=None, alias="idempotencyRecord")
    since: str


class TurnMessage(WorkerMessage):
    """The worker's queue message: which session's pending turn to run (the turn itself is the mark's)."""

    session_id: str = Field(alias="sessionId", pattern=r"^[0-9a-f]{32}$")
    turn_id: str = Field(alias="turnId", pattern=TURN_ID_PATTERN)


TurnQueue = WorkerQueue[TurnMessage]


def turn_accepted(session_id: str, turn_id: str, expected_s: float, model_calls: int = 0) -> TurnAccepted:
    """The turn is the worker's: its reply is at the turn's own route."""
    return TurnAccepted(
        path=f"/interviews/{session_id}/turns/{turn_id}",
        url_field="turnUrl",
        ids={"sessionId": session_id, "turnId": turn_id},
        expected_s=expected_s,
        model_calls=model_calls,
    )


def turn_times() -> TurnTimes:
    """How long an interview turn is expected to take: this container's turns, or before any, a
    typical turn's calls at the model's pace."""
    return TurnTimes(calls=TURN_CALLS_PRIOR, call_tokens=TURN_CALL_TOKENS)


CONTAINER_TURN_TIMES = turn_times()
