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
message's contract, the worker's settle policy) is ``lambda_agents.answered_later``; this module
holds the interview's own: the session's mark, the turn's id, where the reply is read, and how
long a turn is expected to take.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..answered_later import AcceptedTurn, WorkerMessage, WorkerQueue
from ..llm.speeds import SpeedEstimate

TURN_ID_PATTERN = r"^[0-9]{13}-[0-9a-f]{8}$"
# A turn's model calls before this container has timed any: the agent's call, a QuickCheck and
# the call that asks, plus one more (a Reviewer, or the greeting's settings) at each call's usual size.
TURN_CALLS_PRIOR = 4
TURN_CALL_TOKENS = 256
TURN_TIMES_WINDOW = 16
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


@dataclass(frozen=True)
class TurnAccepted(AcceptedTurn):
    """The turn is the worker's: its reply is at ``path``, the turn's."""

    session_id: str
    turn_id: str
    expected_s: float
    url_field: ClassVar[str] = "turnUrl"

    def path(self) -> str:
        return f"/interviews/{self.session_id}/turns/{self.turn_id}"

    def ids(self) -> dict[str, Any]:
        return {"sessionId": self.session_id, "turnId": self.turn_id}


class TurnTimes:
    """How long this container's turns took (thread-safe), read cautiously (the 80th percentile of
    the last ``TURN_TIMES_WINDOW``): a turn expected to outlast the request is handed over before
    any call is paid for."""

    def __init__(self, window: int = TURN_TIMES_WINDOW) -> None:
        self._seconds: deque[float] = deque(maxlen=window)
        self._lock = threading.Lock()

    def record(self, seconds: float) -> None:
        with self._lock:
            self._seconds.append(max(0.0, seconds))

    def expected_s(self, speed: SpeedEstimate) -> float:
        with self._lock:
            seen = sorted(self._seconds)
        if not seen:
            return TURN_CALLS_PRIOR * speed.seconds_for(TURN_CALL_TOKENS)
        return seen[min(len(seen) - 1, math.ceil(len(seen) * 0.8) - 1)]

    def clear(self) -> None:
        with self._lock:
            self._seconds.clear()


CONTAINER_TURN_TIMES = TurnTimes()
