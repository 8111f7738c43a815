"""What the agents of one applicant turn share (docs/interview.md#the-agent-loop): the working state
and what the turn produced, its iteration budget, every model call's record, and the checkpoint a
tool stopped half-way by the deadline is undone to."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ...llm import Deadline, Usage
from ...llm.accounting import ModelAccount, accounted
from ...llm.types import Attempt, Message
from ..rules.handoff import Transcript
from ..rules.models import InterviewState, JobDefinition
from ..rules.state_changes import StateChange, apply_change

DEFAULT_MAX_ITERATIONS = 10
StepState = Literal["started", "done"]


class TurnLive(Protocol):
    """What the applicant's open connections hear while the turn runs (``live.LiveAnswer``): which
    hidden step works (``progress``), and the reply's words once they may be shown (``write``)."""

    def progress(self, agent: str, step: str, state: StepState) -> None: ...

    def write(self, text: str) -> None: ...


class UnwatchedTurn:
    """A turn nobody watches live (unit tests, the benchmarks): its frames go nowhere."""

    def progress(self, agent: str, step: str, state: StepState) -> None:
        return None

    def write(self, text: str) -> None:
        return None


def normalise_question(text: str) -> str:
    """The form in which 'the exact question' is compared: surrounding and repeated whitespace aside."""
    return " ".join(text.split())


@dataclass
class TurnContext:
    """What the agents of one applicant turn share: the working state and what the turn produced."""

    session_id: str
    turn_id: str
    job: JobDefinition
    state: InterviewState
    history: list[Message]  # role/content prompt history, ending with the applicant's new message
    transcript: Transcript  # for handoff summaries
    deadline: Deadline | None = None
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    iterations: int = 0
    usage: Usage = field(default_factory=Usage)
    changes: list[StateChange] = field(default_factory=list)
    quick_checks_passed: set[tuple[str, str]] = field(default_factory=set)
    answer_needs_review: bool = False
    baked: dict[str, Any] = field(default_factory=dict)  # additionalData for the turn's assistant message
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    step_seq: int = 0
    user_id: str | None = None  # the applicant's id, for the accounting log line
    prompt_version: str = ""  # the interview's (``Orchestrator.prompt_version``)
    account: ModelAccount | None = None  # every model call of the turn (llm.accounting), None before the first
    live: TurnLive = field(default_factory=UnwatchedTurn)

    @contextmanager
    def step(self, agent: str, step: str) -> Iterator[None]:
        """A hidden step (a model call the applicant never reads) shown as it runs: ``progress``
        started before its call, done after it, whatever its end."""
        self.live.progress(agent, step, "started")
        try:
            yield
        finally:
            self.live.progress(agent, step, "done")

    def bill(self, attempts: Sequence[Attempt], *, purpose: str, outcome: str, model: str = "") -> None:
        """One model call's record (``llm.accounting.accounted``: its log line), added to the turn's."""
        account = accounted(
            attempts,
            model=model,
            prompt_version=self.prompt_version,
            purpose=purpose,
            user_id=self.user_id,
            outcome=outcome,
        )
        self.account = account if self.account is None else self.account + account

    def apply(self, *changes: StateChange) -> None:
        """Apply changes to the working state (the reducer checks the invariants) and collect them,
        all or none: a change the reducer refuses leaves the state as it was."""
        state = self.state
        for change in changes:
            state = apply_change(state, change, self.job)
        self.state = state
        self.changes.extend(changes)

    def passed_quick_check(self, question: str) -> bool:
        """Whether this exact question (whitespace aside) passed a QuickCheck in this turn."""
        wanted = normalise_question(question)
        return any(checked == wanted for _, checked in self.quick_checks_passed)

    def next_step_seq(self) -> int:
        self.step_seq += 1
        return self.step_seq

    @property
    def iterations_left(self) -> int:
        return self.max_iterations - self.iterations

    @property
    def made_progress(self) -> bool:
        """A tool succeeded in this turn: there is something worth storing if the turn is cut short."""
        return any(record.status == "success" for record in self.tool_calls)

    def checkpoint(self) -> TurnCheckpoint:
        return TurnCheckpoint(
            state=self.state,
            changes=len(self.changes),
            quick_checks_passed=set(self.quick_checks_passed),
            answer_needs_review=self.answer_needs_review,
            baked=copy.deepcopy(self.baked),
        )

    def restore(self, checkpoint: TurnCheckpoint) -> None:
        """Back to ``checkpoint``: what a tool stopped half-way had applied is undone (its tokens stay counted)."""
        self.state = checkpoint.state
        del self.changes[checkpoint.changes :]
        self.quick_checks_passed = set(checkpoint.quick_checks_passed)
        self.answer_needs_review = checkpoint.answer_needs_review
        self.baked = checkpoint.baked


@dataclass(frozen=True)
class TurnCheckpoint:
    state: InterviewState
    changes: int
    quick_checks_passed: set[tuple[str, str]]
    answer_needs_review: bool
    baked: dict[str, Any]


@dataclass(frozen=True)
class ToolCallRecord:
    agent: str
    tool_name: str
    status: str
