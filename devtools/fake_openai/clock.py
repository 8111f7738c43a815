"""Clocks a test or a benchmark moves instead of waiting for real time to pass.

``ManualClock`` is moved by hand: the fake server's ``batch_clock`` and ``cache_clock`` take it, so
a test steps a batch job or the prompt cache through hours. ``JumpingClock`` also moves when a rate
budget waits on it: shared by the client's ``RateBudget`` (its ``clock`` and ``wait_on``) and the
fake server's ``rate_clock``, each request leaves at the moment its turn comes on that clock and
arrives then, however busy the machine is, so a test asserts what the pacing decided."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

# How often (real seconds) a caller waiting for its turn on a ``JumpingClock`` looks again.
_LOOK_AGAIN_S = 0.001
# The least a wait moves the clock: a wait computed from a refill that rounding left a hair short
# of a turn must still move it, or the budget would wait for a turn that never comes.
_LEAST_JUMP_S = 1e-6


class ManualClock:
    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class JumpingClock(ManualClock):
    """A hand-moved clock on which waiting takes no real time: ``wait_on`` (a rate budget's wait for
    its turn) moves the clock to the end of the wait, recorded in ``waits``.

    Alone, a caller's wait moves the clock at once. Callers run by ``run_together`` are a burst:
    the clock moves only when every one of them is waiting (none is sending a request or reading
    an answer, which take no time on this clock), and then to the earliest end of a wait, so that a
    request sent on its turn reaches the server before the clock moves on; its late arrival on a
    busy machine is not a later arrival on this clock."""

    def __init__(self, start: float = 1000.0) -> None:
        super().__init__(start)
        self._state = threading.Condition()
        self._busy = 0  # callers of ``run_together`` that are not waiting
        self._ends: dict[int, float] = {}  # each waiting one's end of its wait, by thread
        self.waits: list[float] = []

    def advance(self, seconds: float) -> None:
        with self._state:
            self.now += seconds

    def run_together(self, calls: Sequence[Callable[[], T]]) -> list[T]:
        """Run ``calls`` at once, one thread each, as one burst on this clock; their results in order."""
        with self._state:
            self._busy += len(calls)

        def one(call: Callable[[], T]) -> T:
            try:
                return call()
            finally:
                with self._state:
                    self._busy -= 1
                    self._state.notify_all()

        with ThreadPoolExecutor(len(calls)) as pool:
            return list(pool.map(one, calls))

    def wait_on(self, condition: threading.Condition, seconds: float) -> None:
        """Wait ``seconds`` on ``condition`` (held by the caller). Alone: the clock jumps by them.
        In a burst: until this wait's end is the earliest and nobody else is busy, then the clock
        jumps to it; or until ``condition`` is notified (the line moved), when it returns early."""
        me = threading.get_ident()
        with self._state:
            self.waits.append(seconds)
            end = self.now + max(seconds, _LEAST_JUMP_S)
            if self._busy == 0:  # not one of a burst
                self.now = end
                return
            self._busy -= 1
            self._ends[me] = end
        notified = False
        while True:
            with self._state:
                if notified or (self._busy == 0 and end <= min(self._ends.values())):
                    if not notified:
                        self.now = max(self.now, end)
                    del self._ends[me]
                    self._busy += 1
                    return
            notified = condition.wait(_LOOK_AGAIN_S)  # lets the others in the line take and give back turns
