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
"""

from __future__ import annotations

import math
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ..llm.speeds import SpeedEstimate

TURN_ID_PATTERN = r"^[0-9]{13}-[0-9a-f]{8}$"
# A turn's model calls before this container has timed any: the agent's call, a QuickCheck and
# the call that asks, plus one more (a Reviewer, or the greeting's settings) at each call's usual size.
TURN_CALLS_PRIOR = 4
TURN_CALL_TOKENS = 256
TURN_TIMES_WINDOW = 16
PENDING_TURN_STALE_S = 15 * 60  # a mark older than this is a worker that died: it no longer blocks
MAX_RETRY_AFTER_S = 10
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


class TurnMessage(BaseModel):
    """The worker's queue message: which session's pending turn to run (the turn itself is the mark's)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    session_id: str = Field(alias="sessionId", pattern=r"^[0-9a-f]{32}$")
    user_id: str = Field(alias="userId", min_length=1, max_length=128)
    turn_id: str = Field(alias="turnId", pattern=TURN_ID_PATTERN)

    def as_message(self) -> str:
        return self.model_dump_json(by_alias=True)


class TurnQueue(Protocol):
    def send(self, message: TurnMessage) -> None:
        """Hand the turn to the worker; raises when the queue did not take it."""
        ...


def turn_path(session_id: str, turn_id: str) -> str:
    """The turn's route; the 202 puts the stage or base path the request came through before it
    (``api.now_or_later``), so the client's URL resolves on the execute-api URL and a custom domain alike."""
    return f"/interviews/{session_id}/turns/{turn_id}"


@dataclass(frozen=True)
class TurnAccepted:
    """The turn is the worker's: its reply is at ``turn_path``."""

    session_id: str
    turn_id: str
    expected_s: float

    @property
    def retry_after_s(self) -> int:
        return max(1, min(MAX_RETRY_AFTER_S, math.ceil(self.expected_s)))

    def as_response(self) -> dict[str, Any]:
        return {
            "status": "pending",
            "sessionId": self.session_id,
            "turnId": self.turn_id,
            "turnUrl": turn_path(self.session_id, self.turn_id),
            "retryAfterSeconds": self.retry_after_s,
            "expectedSeconds": math.ceil(self.expected_s),
        }


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
