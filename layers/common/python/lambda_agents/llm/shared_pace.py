"""A model's pace shared between the function that answers in the request and its worker
(docs/chat-and-templates.md#answers-that-do-not-fit-in-a-request).

Why: the pace is learned per container (``speeds``), and the chat's request and its worker are
different functions. Once the request's container has seen a slow answer it expects every answer
to be slow and hands each to the worker at once, so it never makes an answer again and never sees
the pace come back; the worker, which makes all of them, does. The worker publishes the readings
it remembers after each turn (``publish``); the request merges the newest into its own before it
decides to hand a turn over (``refresh``, at most every ``REFRESH_S``). Either side failing to
reach the record only loses the sharing: logged, never raised.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from ..observability import logger
from .speeds import ModelSpeeds, PaceReading

REFRESH_S = 10.0


class PaceRecord(Protocol):
    """Where the readings are kept (``storage.pace.DynamoPaceRecord``)."""

    def read(self, model: str) -> list[PaceReading]: ...

    def write(self, model: str, readings: list[PaceReading]) -> None: ...


@dataclass
class SharedPace:
    """``model``'s readings in ``speeds`` shared through ``record``."""

    record: PaceRecord
    speeds: ModelSpeeds
    model: str
    epoch: Callable[[], float] = time.time
    refresh_s: float = REFRESH_S
    _refreshed_at: float | None = field(default=None, init=False)

    def publish(self) -> None:
        """The worker's: what it remembers of the model's pace, for the request to learn."""
        readings = self.speeds.readings(self.model, self.epoch())
        if not readings:
            return
        try:
            self.record.write(self.model, readings)
        except Exception as error:
            logger.warning("model pace not shared", extra={"error_type": type(error).__name__})

    def refresh(self) -> None:
        """The request's: learn the worker's newest readings (at most every ``refresh_s``)."""
        now = self.epoch()
        if self._refreshed_at is not None and now - self._refreshed_at < self.refresh_s:
            return
        self._refreshed_at = now
        try:
            readings = self.record.read(self.model)
        except Exception as error:
            logger.warning("model pace not read", extra={"error_type": type(error).__name__})
            return
        self.speeds.merge(self.model, readings, now)
