"""Turns answered now or later: what the chat (``chat.pending``,
docs/chat-and-templates.md#answers-that-do-not-fit-in-a-request) and the interview
(``interview.pending_turns``, docs/interview.md#turns-answered-later) do alike when a turn's answer
may come after its request. Each domain passes its own specifics in: its ids, its
queue message's fields, its estimate of a turn's time, and its own outcome of a turn the worker
gives up (the chat stores its fallback answer, the interview records a failure the client reads as 503).

API Gateway ends a request at 29 s, and a real model may need minutes for a turn. So:

- **Now or later** (``TurnTimes``, ``answer_later``, ``now_or_later``): a turn is answered in its
  request unless the client prefers to read it later (``Prefer: respond-async``) or it is not
  expected to fit in the request's time; one that the deadline cuts anyway (``CutShort``) goes to
  the worker too. Without a worker every turn is answered in its request.
- **The accepted turn** (``TurnAccepted``): the client is told where to read the answer (a route
  of this API) and when to look first (``Retry-After``: the expected time, between 1 and 10 s, so
  a long turn is still polled every 10 s; ``POLL_S`` while it is being written).
- **The hand-off** (``WorkerMessage``, ``WorkerQueue``): a small message naming the turn, never
  its content; the worker validates it like any input and checks it against what is stored.
- **The worker's delivery policy** (``TurnWorker``): each SQS record is worked on its own, a failed
  one reported as a partial batch failure (Powertools' ``BatchProcessor``) and delivered again,
  while the rest of the batch is done. A turn with nothing to do (deleted or withdrawn, answered
  already, a message naming no waiting turn) is a normal end: the domain logs why at INFO and the
  record is done, not delivered again. A failure is delivered again, except on the record's last
  delivery (the queue's maxReceiveCount, which the function is told): the dead-letter queue would
  keep a turn someone is waiting for, so there the domain gives the turn up its own way
  (``PendingTurns.give_up``) and every turn ends. A body that is not the domain's message fails
  (into the dead-letter queue): there is no turn to end.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel, ConfigDict, Field

from .live import LiveChannel, NoLiveChannel, emit_push_counts
from .llm.policy import DEADLINE_SLACK_S, Deadline
from .llm.speeds import SPEED_MEMORY_S, SpeedEstimate
from .observability import logger, metrics

if TYPE_CHECKING:  # the request functions import this module too: SQS's parts only where a worker runs
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from .llm.accounting import ModelAccount

MIN_RETRY_AFTER_S = 1
MAX_RETRY_AFTER_S = 10  # however long a turn is expected to take, the client looks at least this often
POLL_S = 2  # Retry-After of a read while the worker is still answering

TURN_TIMES_WINDOW = 16

AnswerT = TypeVar("AnswerT")
LaterT = TypeVar("LaterT")
MessageT = TypeVar("MessageT", bound="WorkerMessage")
MessageT_contra = TypeVar("MessageT_contra", bound="WorkerMessage", contravariant=True)
ResultT = TypeVar("ResultT")
ResultT_co = TypeVar("ResultT_co", covariant=True)


# -- now or later ----------------------------------------------------------------------------------


class TurnTimes:
    """How long a domain's turn is expected to take in this container (thread-safe): before it has
    timed any, its ``calls`` at the model's pace, each writing ``call_tokens``; then the 80th
    percentile of the last ``window`` turns it ran to their end, read cautiously, and never less
    than one call at the model's learned pace (a turn takes at least its first call). ``window`` 0:
    the pace alone, for turns whose size varies too much for past ones to say (the chat's answer).

    A time older than ``memory_s`` is forgotten, as the pace's readings are (``llm.speeds``): a
    container whose turns were slow hands every later turn to the worker before it runs, so it
    times no turn again and would otherwise never learn that turns are quick once more."""

    def __init__(
        self,
        calls: int,
        call_tokens: int,
        window: int = TURN_TIMES_WINDOW,
        *,
        memory_s: float = SPEED_MEMORY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.calls, self.call_tokens = calls, call_tokens
        self._seconds: deque[tuple[float, float]] = deque(maxlen=window)
        self._memory_s, self._clock = memory_s, clock
        self._lock = threading.Lock()

    def record(self, seconds: float) -> None:
        with self._lock:
            self._seconds.append((self._clock(), max(0.0, seconds)))

    def expected_s(self, pace: SpeedEstimate) -> float:
        since = self._clock() - self._memory_s
        with self._lock:
            seen = sorted(seconds for at, seconds in self._seconds if at >= since)
        if not seen:
            return self.calls * pace.seconds_for(self.call_tokens)
        timed = seen[min(len(seen) - 1, math.ceil(len(seen) * 0.8) - 1)]
        if not pace.learned:
            return timed  # the turns timed here say more than a prior
        # A turn takes at least its first call: turns timed before the model slowed say nothing of
        # it now, and a turn started on them only finds its first call cannot be planned.
        return max(timed, pace.seconds_for(self.call_tokens))

    def clear(self) -> None:
        with self._lock:
            self._seconds.clear()


class LearnedByTheWorker(Protocol):
    """What the request learns of what its worker learned (``llm.shared_learning``)."""

    def refresh(self) -> None: ...


@dataclass(frozen=True)
class Handover(Generic[MessageT]):
    """What handing a domain's turns to its worker takes: the worker's queue, the model's pace
    (learned in this container, or its prior) and how long the domain's turns take here."""

    queue: WorkerQueue[MessageT]
    pace: Callable[[], SpeedEstimate]
    times: TurnTimes
    # What its worker learns (``llm.shared_learning``: the pace; the interview's output sizes too):
    # without it a container that saw one slow answer would hand every later turn over, and never
    # see the pace come back.
    shared: LearnedByTheWorker | None = None

    def expected_s(self) -> float:
        if self.shared is not None:
            self.shared.refresh()
        return self.times.expected_s(self.pace())


def answer_later(*, prefer_later: bool, expected_s: float, deadline: Deadline | None) -> bool:
    """Whether a turn goes to the worker before any model call is paid for: when the client
    prefers to read it later, or when its expected time does not fit in what the deadline leaves."""
    return prefer_later or (deadline is not None and expected_s > deadline.remaining_s() - DEADLINE_SLACK_S)


class CutShort(Exception):
    """The request's time ran out before the turn was done: the worker answers it instead. Raised
    by a domain's answer in the request (``now_or_later``'s ``answer_now``); ``spent_tokens``: what
    the cut calls were billed for, counted to the user's budget (``spending``) though nothing is
    kept; ``account``: the same calls' record, which the worker adds to the answer it stores, so the
    answer's usage is all its turn cost."""

    def __init__(self, spent_tokens: int = 0, account: ModelAccount | None = None) -> None:
        super().__init__("cut short by the request's deadline")
        self.spent_tokens = spent_tokens
        self.account = account

    def spent_before(self) -> dict[str, Any] | None:
        """What the worker's message carries of the request's calls (``WorkerMessage.spent_before``)."""
        return None if self.account is None or not self.account.attempts else self.account.as_dict()


def now_or_later(
    answer_now: Callable[[], AnswerT], hand_over: Callable[[CutShort | None], LaterT], *, later: bool
) -> AnswerT | LaterT:
    """The turn answered in the request, or handed to the worker: at once when ``later``
    (``answer_later``), or when the deadline cuts the answer (``CutShort``, which ``hand_over``
    gets: what the request's calls were billed for). Nothing the cut answer made may be
    committed: the worker answers the turn whole."""
    if later:
        return hand_over(None)
    try:
        return answer_now()
    except CutShort as cut:
        return hand_over(cut)


# -- the accepted turn -----------------------------------------------------------------------------


@dataclass(frozen=True)
class TurnAccepted:
    """A turn the worker has: where the client reads its answer (``path``, a route of this API; the
    route puts the stage or base path it was called through before it, ``api.turn_routes``), in
    which field of the 202 body (``url_field``, also its Location), the fields that name the turn
    (``ids``, camelCase), how long it is expected to take (``expected_s``), and the model calls the
    request completed before it handed the turn over (``model_calls``): the worker takes their
    answers without calling, so the request is the one that counts them."""

    path: str
    url_field: str
    ids: Mapping[str, Any]
    expected_s: float
    model_calls: int = 0

    @property
    def retry_after_s(self) -> int:
        """When to look first: the expected time, looked at least every ``MAX_RETRY_AFTER_S``."""
        return max(MIN_RETRY_AFTER_S, min(MAX_RETRY_AFTER_S, math.ceil(self.expected_s)))

    def as_response(self, *, polled: bool = False) -> dict[str, Any]:
        """The 202's body; ``polled``: read again while the worker writes it (look again in ``POLL_S``)."""
        return {
            "status": "pending",
            **self.ids,
            self.url_field: self.path,
            "retryAfterSeconds": POLL_S if polled else self.retry_after_s,
            "expectedSeconds": math.ceil(self.expected_s),
        }


# -- the hand-off ------------------------------------------------------------------------------------


class WorkerMessage(BaseModel):
    """The worker's queue message: whose turn (``userId``, checked against the stored session) and
    the ids the domain adds; never the turn's content, which the worker reads from the store."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    user_id: str = Field(alias="userId", min_length=1, max_length=128)
    # The budget's slot the request was admitted to, the turn's reservation there and its id
    # (``spending``): the worker counts its tokens to that slot, whenever it runs, and gives that
    # reservation back. Absent in a message of a request the budget did not count (off): the
    # worker counts to its own slot, nothing to give back.
    spending_slot: int | None = Field(default=None, alias="spendingSlot", ge=0)
    reservation_id: str | None = Field(default=None, alias="reservationId", pattern=r"^[0-9a-f]{1,64}$")
    reserved_tokens: int = Field(default=0, alias="reservedTokens", ge=0, le=100_000_000)
    # What the request's calls were billed for before it handed the turn over
    # (``ModelAccount.as_dict()``): the worker adds it to the answer's usage.
    spent_before: dict[str, Any] | None = Field(default=None, alias="spentBefore")
    # A message sent before the budget's window replaced its calendar day: its reservation sits on
    # a day's counter nothing reads any more, so the worker counts to its own slot.
    spending_day: str | None = Field(default=None, alias="spendingDay", pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")

    def as_message(self) -> str:
        # The budget's fields only when the budget counted the request: otherwise the message is
        # the turn's ids alone, as before the budget existed.
        unset = {"spending_day"}
        if self.spent_before is None:
            unset.add("spent_before")
        if self.spending_slot is None:
            unset |= {"spending_slot", "reservation_id", "reserved_tokens"}
        return self.model_dump_json(by_alias=True, exclude=unset)


class WorkerQueue(Protocol[MessageT_contra]):
    def send(self, message: MessageT_contra) -> None:
        """Hand the turn to the worker; raises when the queue did not take it."""
        ...


# -- the worker --------------------------------------------------------------------------------------


def is_last_delivery(record: SQSRecord, max_receive_count: int) -> bool:
    """Whether SQS will not deliver the record again if it fails; a record that does not say how
    often it was received (Powertools' property raises KeyError then) counts as a first delivery."""
    return int(record.attributes.get("ApproximateReceiveCount") or 1) >= max_receive_count


@dataclass(frozen=True)
class RecordOutcome(Generic[ResultT]):
    """How a record's turn ended: ``result`` of its run, or of giving it up (``gave_up``: its last
    delivery failed); None: nothing to count (a normal end the domain logged)."""

    result: ResultT | None
    gave_up: bool = False


class PendingTurns(Protocol[MessageT_contra, ResultT_co]):
    """A domain's worker side: run a handed-over turn (None: nothing to run or to write to, a normal
    end the domain logs), or give it up on its last delivery with the domain's own outcome."""

    def run_pending(self, message: MessageT_contra, deadline: Deadline | None) -> ResultT_co | None: ...

    def give_up(self, message: MessageT_contra, error: Exception) -> ResultT_co | None: ...


@dataclass(frozen=True)
class WorkerParts(Generic[MessageT, ResultT]):
    """What a worker function runs on: its domain's side of the turns, how often SQS delivers a
    record before its dead-letter queue takes it (the queue's maxReceiveCount, which it is told),
    and the channel its answers' frames go through (its counts are the invocation's metrics)."""

    turns: PendingTurns[MessageT, ResultT]
    max_receive_count: int
    live: LiveChannel = field(default_factory=NoLiveChannel)


@dataclass(frozen=True)
class TurnWorker(Generic[MessageT]):
    """One worker function's records: its queue message type, the work's name in log lines
    (``what``), how a last delivery's failure ends (``gives_up_as``, e.g. ": the fallback answer")
    and the metric that counts its records."""

    message: type[MessageT]
    what: str
    gives_up_as: str
    records_metric: str

    def handle(
        self,
        event: dict[str, Any],
        context: LambdaContext,
        parts: WorkerParts[MessageT, ResultT],
        count: Callable[[RecordOutcome[ResultT]], None],
    ) -> dict[str, Any]:
        """Every record of the batch worked (``work``) and its outcome counted, and what the batch's
        frames met (``live.push_metrics``); the answer names the records that failed, for SQS to
        deliver again."""

        def one(record: SQSRecord) -> None:
            deadline = Deadline.from_lambda_context(context)
            count(self.work(record, parts.max_receive_count, parts.turns, deadline))

        try:
            return process_records(event, context, one, self.records_metric)
        finally:
            emit_push_counts(parts.live)

    def work(
        self,
        record: SQSRecord,
        max_receive_count: int,
        turns: PendingTurns[MessageT, ResultT],
        deadline: Deadline | None,
    ) -> RecordOutcome[ResultT]:
        """Run the record's turn; on a failure raise for the record to be delivered again, unless
        this is its last delivery: then the domain gives the turn up. A body that is not a
        ``message`` raises (ValidationError)."""
        message = self.message.model_validate_json(record.body)
        try:
            return RecordOutcome(turns.run_pending(message, deadline))
        except Exception as error:
            extra = {"error_type": type(error).__name__}
            if not is_last_delivery(record, max_receive_count):
                logger.exception(f"{self.what} failed; redelivered", extra=extra)
                raise
            logger.exception(f"{self.what} failed on its last delivery{self.gives_up_as}", extra=extra)
            return RecordOutcome(turns.give_up(message, error), gave_up=True)


def process_records(
    event: dict[str, Any], context: LambdaContext, handle: Callable[[SQSRecord], None], records_metric: str
) -> dict[str, Any]:
    """Every record of the batch through ``handle``, counted as ``records_metric``; the answer
    names the records that failed, for SQS to deliver again. Powertools' batch utility is imported
    here, in the workers only: ChatFunction and InterviewFunction import this module for the decision
    and the 202, and would pay ~35 ms of cold start for it."""
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response

    metrics.add_metric(name=records_metric, unit=MetricUnit.Count, value=len(event.get("Records") or []))
    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    return dict(process_partial_response(event=event, record_handler=handle, processor=processor, context=context))
