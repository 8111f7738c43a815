"""Where an applicant's turn runs, in the request and in the worker alike (docs/interview.md#a-turn):
the Orchestrator's ``StateChange`` list applied to the session by the reducer the agents used, and
written as ONE unit under the session's ``version`` (optimistic locking): the new state, the
applicant's message and the reply, and, for a turn that finishes the interview, its event in the
outbox (published after the commit, ``rules.application_events``). A turn answered after its
request is committed with its reply, stored for the client to read, while the session's mark is
still that turn's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..answered_later import CutShort
from ..live import LiveAnswer, LiveChannel, NoLiveChannel
from ..llm import Deadline, DeadlineReached
from ..llm.accounting import ModelAccount
from ..spending import Spent
from .errors import TurnLimitReached
from .paid_calls import TurnCallBook
from .pending_turns import PendingTurn
from .repository import InterviewRepository, StoredInterview, TurnCommit
from .rules.application_events import ApplicationEvent, ApplicationEventDelivery, EventStatus
from .rules.models import ChatMessage, InterviewSession, InterviewState, SessionStatus
from .rules.state_changes import (
    AddAssistantMessage,
    AddUserMessage,
    FinishInterview,
    ReopenField,
    StateChange,
    apply_changes,
)

if TYPE_CHECKING:  # the agents are imported by the first turn that runs (agents.orchestrator)
    from .agents.orchestrator import OrchestratorInput, TurnOutcome


class TurnAgents(Protocol):
    """What a turn runs: the Orchestrator (``agents.orchestrator``), or what builds it when it runs."""

    def process_message(self, given: OrchestratorInput) -> TurnOutcome: ...


@dataclass(frozen=True)
class TurnResult:
    session: InterviewSession
    outcome: TurnOutcome
    messages: list[ChatMessage]


@dataclass(frozen=True)
class TurnRunner:
    """What a turn runs on: ``render_answer`` is the route's answer to a turn, stored with a turn
    answered after its request for its GET (``views.turn_answer``; passed in, so that the service
    does not import its views), and pushed to the applicant's open connections (``live``)."""

    repository: InterviewRepository
    orchestrator: TurnAgents
    clock: Callable[[], datetime]
    max_turns: int
    events: ApplicationEventDelivery | None = None
    render_answer: Callable[[TurnResult], dict[str, Any]] | None = None
    live: LiveChannel = field(default_factory=NoLiveChannel)

    def run(
        self,
        stored: StoredInterview,
        turn: PendingTurn,
        deadline: Deadline | None,
        spent: Spent,
        *,
        cut_is_handover: bool = False,
        handed_over: bool = False,
        spent_before: ModelAccount | None = None,
        calls: TurnCallBook | None = None,
    ) -> TurnResult:
        """The turn run and committed. ``cut_is_handover``: a turn the deadline cuts is cut short
        (``CutShort``) for the worker instead of committed; ``handed_over``: the worker's run;
        ``spent_before``: what the request that handed it over spent on it, in ``usageTotal`` too;
        ``calls``: the turn's model calls, those the request paid for taken from it (``paid_calls``)."""
        session = stored.session
        opening: list[StateChange] = [ReopenField(turn.field_id)] if turn.field_id is not None else []
        if sum(1 for message in stored.messages if message.role == "user") >= self.max_turns:
            raise TurnLimitReached(f"the interview has taken its {self.max_turns} messages")
        now = self.clock()
        opened = apply_changes(session.state, opening, session.job)
        from .agents.orchestrator import OrchestratorInput  # the agents: imported when a turn runs

        # The applicant's open connections hear the hidden steps as they start, then the question's
        # words once checked, then the turn as committed (``done``), from the request or the worker.
        live = LiveAnswer(self.live, session.user_id, session.session_id, turn.turn_id, time.monotonic)

        try:
            outcome = self.orchestrator.process_message(
                OrchestratorInput(
                    session_id=session.session_id,
                    job=session.job,
                    state=opened,
                    chat_history=stored.messages,
                    user_message=turn.text,
                    turn_id=turn.turn_id,
                    deadline=deadline,
                    resumed=handed_over,
                    user_id=session.user_id,
                    live=live,
                    calls=calls,
                )
            )
        except DeadlineReached as error:
            if cut_is_handover:
                # Every call of the turn so far (the error's usage is the cut call's alone): the
                # request's share of the day, which the worker's run does not count again.
                account = error.account
                so_far = error.usage if account is None else account.usage
                raise CutShort(so_far.total_tokens, account) from None
            raise
        spent.tokens = outcome.usage.total_tokens  # billed whatever happens next (a cut, a refused commit)
        if cut_is_handover and outcome.cut_by_time:
            raise CutShort(outcome.usage.total_tokens, outcome.account)
        result = self._result(session, opened, opening, outcome, now, spent_before)
        self._commit(result, session, turn, handed_over, live)
        return result

    def _result(
        self,
        session: InterviewSession,
        opened: InterviewState,
        opening: list[StateChange],
        outcome: TurnOutcome,
        now: datetime,
        spent_before: ModelAccount | None,
    ) -> TurnResult:
        state = apply_changes(opened, outcome.changes, session.job)
        messages = messages_from(outcome.changes, session.message_count, now.isoformat())
        reopened = [change.field_id for change in opening if isinstance(change, ReopenField)]
        if reopened and messages and messages[0].role == "user":
            # The transcript says which answer the applicant corrected.
            messages[0] = messages[0].model_copy(update={"data": {"correctionOf": reopened[0]}})
        updated = session.model_copy(
            update={
                "state": state,
                "version": session.version + 1,
                "message_count": session.message_count + len(messages),
                "usage_total": usage_totals(session.usage_total, outcome, spent_before),
                "updated_at": now.isoformat(),
            }
        )
        return TurnResult(updated, outcome, messages)

    def _commit(
        self, result: TurnResult, before: InterviewSession, turn: PendingTurn, handed_over: bool, live: LiveAnswer
    ) -> None:
        events = finish_events(result.session, result.outcome.changes, result.session.updated_at)
        commit = TurnCommit(result.session, before.version, result.messages, events, turn.idempotency_record)
        answer = self.render_answer(result) if self.render_answer is not None else None
        if handed_over:
            if answer is None:
                raise RuntimeError("a turn answered after its request needs InterviewService.render_answer")
            commit = replace(commit, pending_turn_id=turn.turn_id, turn_id=turn.turn_id, answer=answer)
        self.repository.commit_turn(commit)
        if events and self.events is not None:
            self.events.deliver(events)
        # Committed: the applicant's open connections get the reply, from the request or the worker.
        live.done(answer or {})


def messages_from(changes: Sequence[StateChange], first_seq: int, created_at: str) -> list[ChatMessage]:
    messages: list[ChatMessage] = []
    for change in changes:
        if isinstance(change, AddUserMessage):
            messages.append(
                ChatMessage(seq=first_seq + len(messages), role="user", content=change.content, created_at=created_at)
            )
        elif isinstance(change, AddAssistantMessage):
            messages.append(
                ChatMessage(
                    seq=first_seq + len(messages),
                    role="assistant",
                    content=change.content,
                    agent=change.agent,
                    created_at=created_at,
                    data=change.data,
                )
            )
    return messages


def finish_events(session: InterviewSession, changes: Sequence[StateChange], at: str) -> tuple[ApplicationEvent, ...]:
    """The event of a turn that finished the interview (a correction may finish it again)."""
    for change in changes:
        if isinstance(change, FinishInterview) and change.status is not SessionStatus.IN_PROGRESS:
            status: EventStatus = "completed" if change.status is SessionStatus.COMPLETED else "audit_failed"
            return (
                ApplicationEvent(
                    application_id=session.session_id,
                    job_id=session.job.job_id,
                    job_version=session.job.version,
                    status=status,
                    session_version=session.version,
                    occurred_at=at,
                ),
            )
    return ()


def usage_totals(
    before: Mapping[str, int | float | None], outcome: TurnOutcome, spent_before: ModelAccount | None = None
) -> dict[str, int | float | None]:
    """The application's totals after one more turn: its tokens (prompt, completion, total,
    cached) and what its model calls cost (``costUsd``, from the turn's ``ModelAccount``), the
    sum the employer's view shows; with ``spent_before``, the calls its request made before it
    handed the turn over. A cost some model had no price for stays unknown (None) from then on:
    a partial sum would look like the whole."""
    totals = dict(before)
    usage = outcome.usage if spent_before is None else spent_before.usage + outcome.usage
    account = outcome.account
    if spent_before is not None:
        account = spent_before if account is None else spent_before + account
    turn: dict[str, int] = {**usage.as_dict(), "cachedTokens": usage.cached_prompt_tokens}
    for key, value in turn.items():
        totals[key] = int(totals.get(key) or 0) + value
    cost = 0.0 if account is None else account.cost_usd
    spent = totals.get("costUsd", 0.0)
    totals["costUsd"] = None if cost is None or spent is None else round(float(spent) + cost, 8)
    return totals
