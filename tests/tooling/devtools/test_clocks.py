"""The clocks a test moves instead of waiting (devtools/fake_openai/clock.py). A ``JumpingClock``'s
wait takes no real time; in a burst (``run_together``) it moves only once every caller waits, and
to the earliest end of their waits, so that what one caller does at a moment (send a request, read
an answer) happens at that moment on the clock however long the machine takes over it."""

from __future__ import annotations

import threading
import time

from devtools.fake_openai import JumpingClock, ManualClock

HANG_GUARD_S = 10.0  # only bounds a broken clock; a working one never makes a test wait for it


def wait_for(seconds: float, clock: JumpingClock) -> float:
    """Wait ``seconds`` on ``clock`` as a rate budget does; the clock's time when the wait ended."""
    line = threading.Condition()
    with line:
        clock.wait_on(line, seconds)
    return clock()


def test_a_manual_clock_moves_only_by_hand() -> None:
    clock = ManualClock(start=50.0)
    clock.advance(2.5)
    assert clock() == 52.5


def test_alone_a_wait_jumps_the_clock_by_its_length_in_no_real_time() -> None:
    clock = JumpingClock(start=0.0)
    assert wait_for(30.0, clock) == 30.0
    assert wait_for(0.0, clock) > 30.0  # a wait always moves it, or a turn rounding left short never came
    assert clock.waits == [30.0, 0.0]


def test_in_a_burst_the_clock_waits_for_every_caller_and_moves_to_the_earliest_end_first() -> None:
    clock = JumpingClock(start=0.0)
    busy, go = threading.Event(), threading.Event()
    seen: dict[str, float] = {}

    def sender() -> None:  # busy (a request on its way) until the test lets it go, then waits 5 s
        busy.set()
        assert go.wait(HANG_GUARD_S)
        seen["sender"] = wait_for(5.0, clock)

    def waiter() -> None:
        seen["waiter"] = wait_for(10.0, clock)

    burst = threading.Thread(target=clock.run_together, args=([sender, waiter],))
    burst.start()
    waiting_by = time.monotonic() + HANG_GUARD_S
    while not (busy.is_set() and clock.waits) and time.monotonic() < waiting_by:
        time.sleep(0.005)

    assert clock.waits == [10.0] and clock() == 0.0  # the waiter waits; the sender is busy: no move
    go.set()
    burst.join(HANG_GUARD_S)

    assert seen == {"sender": 5.0, "waiter": 10.0}  # the earliest end first, each at its own end
