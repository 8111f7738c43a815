"""RunStep: the audit record around every tool execution (docs/engine.md#run-steps, docs/interview.md#run-steps).

A RunStep is saved BEFORE the tool runs (tool name, input: the parsed arguments, or the raw
string when they did not parse) and saved again AFTER (the FunctionCallResult, with the data
the model never sees, and the duration). The recorder writes each save at once, outside the
turn's transaction: the records describe what happened, also in a turn whose state write later
loses a race (409) or fails, and a tool never runs unrecorded (a failed save fails the turn
before the tool runs). RunSteps are for audit and debugging, never shown to the applicant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

MAX_RAW_INPUT_CHARS = 8000


@dataclass
class RunStep:
    session_id: str
    turn_id: str
    seq: int
    agent: str
    tool_name: str
    input: Any
    started_at: str
    output: dict[str, Any] | None = None
    duration_ms: int | None = None

    @property
    def finished(self) -> bool:
        return self.output is not None


class RunStepRecorder(Protocol):
    def started(self, step: RunStep) -> None:
        """Record the step before its tool runs; refused when the turn's step of that seq exists."""
        ...

    def finished(self, step: RunStep) -> None:
        """Record the step's result; a step no longer recorded (withdrawn meanwhile) stays gone."""
        ...

    def last_seq(self, session_id: str, turn_id: str) -> int:
        """The highest seq recorded for the turn, 0 for none: a turn run again (by the worker, after
        its request was cut) numbers its steps after those, so what ran before stays recorded."""
        ...


class RunStepExists(Exception):
    """A step of that turn and seq is recorded already (the recorder writes each step once)."""


@dataclass
class InMemoryRunSteps:
    """A recorder that keeps the steps in a list (unit tests, and the API's local checks); like the
    DynamoDB one, it records a turn's step of a given seq once."""

    steps: list[RunStep] = field(default_factory=list)
    events: list[tuple[str, int]] = field(default_factory=list)

    def started(self, step: RunStep) -> None:
        if any((s.session_id, s.turn_id, s.seq) == (step.session_id, step.turn_id, step.seq) for s in self.steps):
            raise RunStepExists(f"run step {step.turn_id}#{step.seq:03d} exists")
        self.steps.append(step)
        self.events.append(("started", step.seq))

    def finished(self, step: RunStep) -> None:
        self.events.append(("finished", step.seq))

    def last_seq(self, session_id: str, turn_id: str) -> int:
        return max((s.seq for s in self.steps if (s.session_id, s.turn_id) == (session_id, turn_id)), default=0)


def recorded_input(raw_arguments: str, parsed: dict[str, Any] | None) -> Any:
    """Parsed arguments when they validated, else the raw string (bounded)."""
    if parsed is not None:
        return parsed
    return raw_arguments[:MAX_RAW_INPUT_CHARS]
