"""How one model call is paced: the seam a model adapter calls, so the adapter itself only maps
requests and answers to its provider's wire (docs/engine.md#time-budgets, #streaming, #rate-limits).

A ``Pacer`` is one adapter's pacing: its stream timeouts (``policy.StreamTimeouts``), its share of
the account's rate limit (``rate_budget.RateBudget``, optional) and its clock. For each request the
adapter opens ``Pacer.call``, which gives the request its place in the rate limit before it is
sent, and hands the adapter what bounds each way of reading the answer:

- **The rate limit.** The request reserves its prompt and ``max_tokens``, and waits its turn while
  the wait still leaves its planned answer time (``Pacing.planned_s``) before the deadline; else it
  is not sent (``RateShareSpent``, the wait as its retry-after). Every answer's ``x-ratelimit-*``
  headers go to the budget (``PacedCall.limits_seen``), and a 429 that arrives anyway gives the
  refused request's cost back and holds the container's budget back for its retry-after; one whose
  headers show the account's limit spent is marked so (``RateLimited.account_limit_reached``): the
  budget's to wait out, not a provider failure for the breaker to count.
- **A streamed answer** (``StreamWatch``): the first token, a stall between two chunks and the
  deadline (``Pacing.answer_by``) are bounded by a watchdog thread that shuts the connection's
  socket down when one is overdue, so the provider stops generating (and billing) at once. A
  started stream's silence is waited out past the stall limit while the caller's time still holds
  one more whole attempt. For a caller that asks for it (``Pacing.cut_when_late``), the answer's
  pace is checked against its plan as it arrives (``speeds.PaceForecast``) and the answer cut as
  soon as it shows it cannot be done in time. The watch also says how the answer arrived
  (``ResponseTiming``), which teaches the model's pace.
- **A whole answer** (``WholeAnswerWatch``, for servers that cannot stream): one read timeout, the
  time left; a non-streamed request the client abandons is still generated and billed in full.

When a stream ends early the watch says whether it was the pacing that ended it, as the
provider-neutral error a caller acts on (``AnswerCut``: the deadline, not retried;
``ProviderTimeout``: no first token or a stall, retried); anything else is the adapter's to
translate. Nothing here knows the provider: it sees a socket, a close function, whether a chunk
carried tokens and how many tokens have arrived.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Literal

from .errors import AnswerCut, ProviderError, ProviderTimeout, RateLimited, RateShareSpent
from .policy import StreamTimeouts
from .rate_budget import RateBudget, Reservation
from .rate_headers import limit_reached
from .speeds import PaceForecast
from .types import ChatRequest, ChatResponse, Pacing, ResponseTiming

# How long a call without a deadline may wait for its rate-limit turn, and how long a 429 without
# retry-after holds the budget back.
MAX_PACING_WAIT_S = 60.0
DEFAULT_HOLD_S = 1.0


class Pacer:
    """One model adapter's pacing (see the module docstring). ``rate_budget`` may be replaced
    between calls (a test gives a running adapter a budget)."""

    def __init__(
        self,
        timeouts: StreamTimeouts | None = None,
        rate_budget: RateBudget | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.timeouts = timeouts or StreamTimeouts()
        self.rate_budget = rate_budget
        self.clock = clock

    @contextlib.contextmanager
    def call(self, request: ChatRequest, prompt_tokens: int) -> Iterator[PacedCall]:
        """The request's turn in the rate limit, held for the whole call (a retry with a rotated key
        included): taken before it is sent (or ``RateShareSpent``), given back when it ends.
        ``prompt_tokens``: the request's input as the provider counts it."""
        budget = self.rate_budget
        turn = None if budget is None else self._take_turn(budget, request, prompt_tokens)
        try:
            yield PacedCall(self, request, budget, turn)
        except RateLimited as refused:
            if budget is not None:
                if turn is not None:
                    turn.cancel()  # the account does not count a request it refused
                    refused.account_limit_reached = limit_reached(refused.limits, turn.tokens)
                budget.resync(refused.limits)
                budget.hold(refused.retry_after_s or DEFAULT_HOLD_S, 0 if turn is None else turn.tokens)
            raise
        finally:
            if budget is not None and turn is not None:
                budget.land(turn)

    def _take_turn(self, budget: RateBudget, request: ChatRequest, prompt_tokens: int) -> Reservation:
        """Wait for the request's place in the container's share of the rate limit, or raise
        ``RateShareSpent`` when waiting would not leave the answer its planned time."""
        reservation = budget.reserve(prompt_tokens + request.max_tokens)
        left = seconds_left(request.pacing)
        may_wait = MAX_PACING_WAIT_S if left is None else left - (request.pacing.planned_s or 0.0)
        still = budget.wait_for_turn(reservation, may_wait)
        if still is not None:
            reservation.cancel()
            share = budget.share
            raise RateShareSpent(
                f"not sent: this container's share of the rate limit ({share.tokens_per_minute:,.0f} tokens, "
                f"{share.requests_per_minute:,.0f} requests a minute) has room for it in {still:.1f} s, "
                f"{may_wait:.1f} s could be waited",
                retry_after_s=still,
            )
        return reservation


class PacedCall:
    """One request's pacing, from its rate-limit turn to its answer (``Pacer.call`` opens it)."""

    def __init__(self, pacer: Pacer, request: ChatRequest, budget: RateBudget | None, turn: Reservation | None) -> None:
        self._pacer = pacer
        self._request = request
        self._budget = budget
        self._turn = turn

    def limits_seen(self, headers: dict[str, str]) -> None:
        """An answer's ``x-ratelimit-*`` headers (names without the prefix) for the rate budget."""
        if self._budget is not None:
            self._budget.resync(headers, self._turn)

    def stream(self) -> StreamWatch:
        """The watch over one streamed answer, from before it is requested to its last chunk."""
        return StreamWatch(self._pacer.timeouts, self._request, self._pacer.clock)

    def whole(self) -> WholeAnswerWatch:
        """The bounds of one whole (non-streamed) answer, from before it is requested."""
        return WholeAnswerWatch(self._pacer.timeouts, self._request.pacing, self._pacer.clock)


def seconds_left(pacing: Pacing) -> float | None:
    """The time left before the attempt's deadline (None: no deadline)."""
    return None if pacing.answer_by is None else max(0.0, pacing.answer_by.remaining_s())


class WholeAnswerWatch:
    """A non-streamed answer is bounded by one read timeout (``read_s``): the time left, else
    ``unbounded_answer_s``."""

    def __init__(self, timeouts: StreamTimeouts, pacing: Pacing, clock: Callable[[], float]) -> None:
        self.limits = timeouts
        self._left = seconds_left(pacing)
        self.read_s = self._left if self._left is not None else timeouts.unbounded_answer_s
        self._clock = clock
        self._started = clock()

    def timing(self) -> ResponseTiming:
        """Only the whole answer's time is known (no first token seen)."""
        return ResponseTiming(first_token_s=0.0, total_s=max(0.0, self._clock() - self._started), streamed=False)

    def cut(self, error: ProviderError) -> ProviderError | None:
        """The deadline's error for a read that timed out at it, else None (``error`` stands)."""
        if isinstance(error, ProviderTimeout) and self._left is not None and self.read_s >= self._left:
            # A non-streamed answer cannot be closed: the provider finishes and bills it anyway.
            return AnswerCut(f"the deadline passed before the whole answer came ({self.read_s:.1f} s)")
        return None


class _PaceTooSlow(Exception):
    """The stream's pace shows the answer cannot be done by the deadline: it is cut now."""


class StreamWatch:
    """One streamed answer's bounds. ``limits``: the stream timeouts for this attempt's expected
    first token; ``header_read_s``: the read timeout until the response's headers (some servers
    send them with the first token: bounded like it, and by the deadline). After the headers the
    adapter ``start``s the watchdog with the connection's socket, tells ``arrived`` of every chunk
    and ``stop``s it when the stream ends; ``cut`` says whether the pacing ended it."""

    def __init__(self, timeouts: StreamTimeouts, request: ChatRequest, clock: Callable[[], float]) -> None:
        pacing = request.pacing
        self._pacing = pacing
        self._clock = clock
        self._started = clock()
        self._left = seconds_left(pacing)
        self.limits = timeouts.for_first_token(pacing.expected_first_token_s)
        first_token_s = self.limits.first_token_s
        self.header_read_s = min(first_token_s, self._left) if self._left is not None else first_token_s
        self._forecast = _forecast(pacing, request.max_tokens, self._started, self._left)
        self._watchdog = _Watchdog(
            self.limits,
            self._left,
            clock,
            None if self._forecast is None else self._forecast.first_token_by(),
            _silence_waited_until(pacing, self._started, self._left, self.limits),
        )
        self.token_chunks = 0
        self._first_token_at: float | None = None
        self._last_token_at: float | None = None
        self._late: str | None = None

    def start(self, sock: socket.socket | None, close: Callable[[], None] | None) -> None:
        """Watch the stream from its headers on: ``sock`` is shut down when a bound is overdue
        (``close`` when there is no socket at hand)."""
        self._watchdog.watch(sock, close)

    def arrived(self, carried_tokens: bool, written_tokens: int) -> None:
        """One chunk read; ``carried_tokens``: it carried answer tokens (not the role or usage
        chunk); ``written_tokens``: the answer's tokens so far. Raises when the answer, at the pace
        it arrives, cannot be done in time (a caller that asked for it): ``cut`` says so."""
        if carried_tokens:
            now = self._clock()
            self._first_token_at = self._first_token_at if self._first_token_at is not None else now
            self._last_token_at = now
            self.token_chunks += 1
        self._watchdog.beat(carried_tokens)
        if carried_tokens and self._forecast is not None:
            self._check_pace(self._forecast, written_tokens)

    def _check_pace(self, forecast: PaceForecast, written_tokens: int) -> None:
        if self._first_token_at is None or self._last_token_at is None:
            return
        late = forecast.late(written_tokens, self._first_token_at, self._last_token_at)
        if late is not None:
            self._late = late
            raise _PaceTooSlow(late)

    def stop(self) -> None:
        self._watchdog.stop()

    def next_cut(self) -> tuple[float, str]:
        """When (on the pacer's clock) the watchdog cuts the stream if nothing arrives before, and
        why: ``first_token``, ``first_token_late``, ``stall`` or ``deadline`` (as ``cut`` words it)."""
        return self._watchdog.overdue()

    def timing(self) -> ResponseTiming | None:
        """How the answer arrived so far (None: no token yet)."""
        if self._first_token_at is None or self._last_token_at is None:
            return None
        return ResponseTiming(self._first_token_at - self._started, self._last_token_at - self._started)

    def cut(self, partial: ChatResponse, *, timed_out_before_start: bool = False) -> ProviderError | None:
        """The error for a stream the pacing ended, carrying ``partial`` (what had arrived), or None
        when something else ended it. ``timed_out_before_start``: the request's read timed out
        before the stream began (the header read, bounded by the deadline)."""
        if timed_out_before_start and self._left is not None and self._left <= self.limits.first_token_s:
            return AnswerCut("the deadline passed before the answer started", partial)
        why = self._watchdog.fired
        left = seconds_left(self._pacing)
        if self._late is not None:
            return AnswerCut(f"cut after {self.token_chunks} chunk(s): {self._late}", partial)
        if why == "deadline" or (left is not None and left <= 0):
            return AnswerCut(f"the deadline cut the answer after {self.token_chunks} chunk(s)", partial)
        if why == "first_token_late":
            return AnswerCut(
                f"no first token while the planned {self._pacing.planned_tokens}-token answer could still be done "
                "by the deadline",
                partial,
            )
        if why == "first_token":
            return ProviderTimeout(f"no first token within {self.limits.first_token_s:g} s", partial)
        if why == "stall":
            return ProviderTimeout(f"the stream stalled for {self._watchdog.silent_s:.1f} s", partial)
        return None


def _forecast(pacing: Pacing, max_tokens: int, now: float, left: float | None) -> PaceForecast | None:
    if left is None or not pacing.cut_when_late or pacing.planned_tokens is None:
        return None
    return PaceForecast(pacing.planned_tokens, max_tokens, now, now + left, pacing.planned_tokens_per_s)


def _silence_waited_until(pacing: Pacing, now: float, left: float | None, limits: StreamTimeouts) -> float | None:
    """Until when a started stream's silence is waited out: as long as what is left after it still
    holds one more whole attempt as this one was planned (``planned_s``) and a stall limit's
    margin for the retry's wait. A caller with minutes (a worker) rides out a provider's pause of
    tens of seconds instead of paying for the answer again from its first token; a request with
    seconds keeps the stall limit, and the retry its time."""
    if left is None or pacing.planned_s is None:
        return None
    return now + left - pacing.planned_s - limits.stall_s


_Due = Literal["first_token", "first_token_late", "stall", "deadline"]


class _Watchdog:
    """Shuts a stream's socket down when its first token, its next chunk or the deadline is
    overdue, or (``first_token_by``, a caller that asked for it) a first token so late that the
    planned answer could no longer be written in time. A started stream's silence is cut after
    the stall limit, or at ``silence_waited_until`` when that is later: a caller with the time
    waits out a provider's pause rather than pay for the answer again. Shutting down (not
    closing) wakes the reader blocked in ``recv`` at once and sends the FIN, so the provider sees
    the client gone and stops generating."""

    def __init__(
        self,
        limits: StreamTimeouts,
        seconds_left: float | None,
        clock: Callable[[], float],
        first_token_by: float | None = None,
        silence_waited_until: float | None = None,
    ) -> None:
        self._limits = limits
        self._clock = clock
        self._started = clock()
        self._deadline_at = None if seconds_left is None else self._started + seconds_left
        self._first_token_by = first_token_by
        self._silence_waited_until = silence_waited_until
        self.silent_s = 0.0  # how long the stream had been silent when a stall cut it
        self._last_beat: float | None = None  # the last chunk after the first token
        self._stopped = threading.Event()
        self._replan = threading.Event()  # set when what is due changes: the first token came, or stop
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._closer: Callable[[], None] | None = None
        self.fired: _Due | None = None

    def watch(self, sock: socket.socket | None, closer: Callable[[], None] | None) -> None:
        self._socket = sock
        self._closer = closer
        self._thread = threading.Thread(target=self._run, name="llm-stream-watchdog", daemon=True)
        self._thread.start()

    def beat(self, token: bool) -> None:
        with self._lock:
            first = token and self._last_beat is None
            if token or self._last_beat is not None:
                self._last_beat = self._clock()
        if first:
            # The watchdog sleeps until the first token's limit; from now on the (shorter) stall
            # limit counts, so it must plan again, or a stall early in the answer goes unseen.
            self._replan.set()

    def stop(self) -> None:
        self._stopped.set()
        self._replan.set()

    def overdue(self) -> tuple[float, _Due]:
        """When the stream is next due to be cut, and why."""
        with self._lock:
            last = self._last_beat
        due: float
        why: _Due
        if last is None:
            due, why = self._started + self._limits.first_token_s, "first_token"
            if self._first_token_by is not None and self._first_token_by < due:
                due, why = self._first_token_by, "first_token_late"
        else:
            due, why = last + self._limits.stall_s, "stall"
            if self._silence_waited_until is not None and self._silence_waited_until > due:
                due = self._silence_waited_until
        if self._deadline_at is not None and self._deadline_at <= due:
            return self._deadline_at, "deadline"
        return due, why

    def _run(self) -> None:
        while not self._stopped.is_set():
            due, why = self.overdue()
            wait = due - self._clock()
            if wait > 0:
                self._replan.wait(wait)
                self._replan.clear()
                continue
            self.fired = why
            with self._lock:
                self.silent_s = self._clock() - (self._last_beat if self._last_beat is not None else self._started)
            self._cut()
            return

    def _cut(self) -> None:
        if self._socket is not None:
            try:
                self._socket.shutdown(socket.SHUT_RDWR)
                return
            except OSError:
                pass
        if self._closer is not None:  # no socket at hand (another transport): close the response
            with contextlib.suppress(Exception):  # best effort: the read timeout still bounds the call
                self._closer()
