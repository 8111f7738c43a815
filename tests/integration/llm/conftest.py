"""Engine integration tests: the real openai client against the fake server on 127.0.0.1."""

from __future__ import annotations

import time

import pytest


class RecordingSleep:
    """Really sleeps (the fake server's clock is the wall clock) and records every wait."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        time.sleep(seconds)


@pytest.fixture
def recording_sleep() -> RecordingSleep:
    return RecordingSleep()
