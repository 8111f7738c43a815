"""A clock moved by hand, for the fake server's ``batch_clock`` and ``cache_clock``: a test or a
benchmark steps a batch job or the prompt cache through hours without waiting for them."""

from __future__ import annotations


class ManualClock:
    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
