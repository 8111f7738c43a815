"""What a worker learns of a model, shared with the function that answers in the request
(docs/chat-and-templates.md#answers-that-do-not-fit-in-a-request, docs/interview.md#turns-answered-later).

Why: the model's pace (``speeds``) and what each purpose's answers need (``budgets``) are learned
per container, and a request and its worker are different functions. Once the chat's request has
seen a slow answer it hands every answer to the worker at once, so it never sees the pace come
back; the interview's request plans the Auditor at its 1,500-token prior because the worker, not
it, sees the Auditor write ~110. The worker publishes what it remembers after each turn
(``publish``); the request merges the newest beside its own before it decides to hand a turn over
(``refresh``, at most every ``REFRESH_S``). Each thing shared is a part of one record per model,
read with one GetItem and written with one UpdateItem, and only when what the worker would write is
not what it last wrote or read. Either side failing to reach the record only loses the sharing:
logged, never raised. What a container merged is never published again as its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from ..observability import logger
from .budgets import LearnedBudgets
from .speeds import ModelSpeeds

REFRESH_S = 10.0


class LearningRecord(Protocol):
    """Where a model's shared parts are kept, by part name (``storage.learning.DynamoLearningRecord``)."""

    def read(self, model: str) -> dict[str, Any]: ...

    def write(self, model: str, parts: dict[str, Any]) -> None: ...


class SharedPart(Protocol):
    """One thing a container learns: what it takes out to share, and how it merges another's in."""

    @property
    def name(self) -> str: ...

    def taken(self, model: str) -> Any: ...

    def learn(self, model: str, shared: Any) -> None: ...


@dataclass(frozen=True)
class SharedPace:
    """A model's pace readings in ``speeds``, each dated in epoch seconds (containers' monotonic
    clocks differ) as ``[at, kind, value]``."""

    speeds: ModelSpeeds
    epoch: Callable[[], float] = time.time
    name: ClassVar[str] = "pace"

    def taken(self, model: str) -> list[list[Any]]:
        return [[at, kind, round(value, 6)] for at, kind, value in self.speeds.readings(model, self.epoch())]

    def learn(self, model: str, shared: Any) -> None:
        readings = [(float(at), str(kind), float(value)) for at, kind, value in shared]
        self.speeds.merge(model, readings, self.epoch())


@dataclass(frozen=True)
class SharedBudgets:
    """A model's own needs in ``budgets`` (keys starting ``<model>|``), as tokens per call type."""

    budgets: LearnedBudgets
    name: ClassVar[str] = "needs"

    def taken(self, model: str) -> dict[str, list[int]]:
        return self.budgets.needs(f"{model}|")

    def learn(self, model: str, shared: Any) -> None:
        self.budgets.merge({str(key): [int(tokens) for tokens in values] for key, values in shared.items()})


@dataclass
class SharedLearning:
    """``parts`` of what this container learns of ``model``, shared through ``record``."""

    record: LearningRecord
    model: str
    parts: tuple[SharedPart, ...]
    clock: Callable[[], float] = time.monotonic
    refresh_s: float = REFRESH_S
    _refreshed_at: float | None = field(default=None, init=False)
    _known: dict[str, Any] | None = field(default=None, init=False)  # what the record holds, as last seen here

    def publish(self) -> None:
        """The worker's: what it remembers, for the request to learn; nothing when the record
        already holds it."""
        taken = {part.name: shared for part in self.parts if (shared := part.taken(self.model))}
        if not taken or taken == self._known:
            return
        try:
            self.record.write(self.model, taken)
        except Exception as error:
            logger.warning("learning not shared", extra={"error_type": type(error).__name__})
            return
        self._known = taken

    def refresh(self) -> None:
        """The request's: learn the worker's newest (at most every ``refresh_s``)."""
        now = self.clock()
        if self._refreshed_at is not None and now - self._refreshed_at < self.refresh_s:
            return
        self._refreshed_at = now
        try:
            stored = self.record.read(self.model)
            for part in self.parts:
                if part.name in stored:
                    part.learn(self.model, stored[part.name])
        except Exception as error:
            logger.warning("shared learning not read", extra={"error_type": type(error).__name__})
            return
        self._known = {part.name: stored[part.name] for part in self.parts if part.name in stored}
