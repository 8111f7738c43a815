"""What the API layer calls (docs/interview.md#a-turn): read the session, call the Orchestrator,
persist its ``StateChange`` list through the repository; and the applicant's own actions.

One applicant turn is written as one unit, guarded by the session's ``version`` (optimistic
locking): the new state (the loaded state with the turn's changes applied by the same reducer
the agents used), the applicant's message and the reply. Two turns of one session that ran at
once cannot both be stored: the second write is refused (``VersionConflict``) and nothing of
its turn is written, so no update is lost and nothing is half-written. Sessions belong to the
user who created them; another user's session is "not found".

The applicant's actions go through the same reducer and the same guarded write:
- ``start``: an interview of the latest version of an open job (the job catalog's field
  definitions, never the client's); ``consent``: the notice accepted, before anything else runs;
- ``skip``: an optional field that is not done; ``correct``: a done or skipped field reopened
  with the applicant's corrected answer, which the Reviewer reviews in the same turn (and the
  Auditor audits again once every field is settled);
- ``withdraw``: everything stored for the interview deleted.

A turn that finishes the interview writes its event (completed / audit_failed) into the outbox
in the same transaction and publishes it after the commit (``application_events.py``).

At a real model's pace a turn may not fit in API Gateway's 29 s (``pending_turns``): with a
``handover`` configured, a turn expected to outlast the request, one the client prefers to read
later, and one the deadline cuts anyway are handed to the worker instead of being committed with a
"please send again" reply; ``run_pending`` is the worker's part, ``turn_outcome`` the client's read.
"""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from ..answered_later import CutShort, answer_later, now_or_later
from ..live import LiveChannel, NoLiveChannel, done_frame, error_frame
from ..llm import Deadline, DeadlineReached
from ..llm.speeds import SpeedEstimate
from ..llm.types import Usage, estimate_tokens
from ..observability import logger
from ..spending import Admission, DailyBudget, reservation_estimate
from .agents.loop import AGENT_MAX_TOKENS
from .agents.orchestrator import Orchestrator, OrchestratorInput, TurnOutcome
from .catalog.jobs import JobCatalog
from .catalog.notice import Notice, Retention, notice_for
from .errors import (
    ConsentRequired,
    FieldActionRefused,
    FieldNotFound,
    InterviewFinished,
    NoticeChanged,
    SessionNotFound,
    TurnFailed,
    TurnInProgress,
    TurnLimitReached,
    TurnNotFound,
    VersionConflict,
)
from .pending_turns import (
    CONTAINER_TURN_TIMES,
    PENDING_TURN_STALE_S,
    PendingTurn,
    TurnAccepted,
    TurnKind,
    TurnMessage,
    TurnQueue,
    TurnTimes,
)
from .repository import InterviewRepository, StoredInterview, TurnCommit
from .rules.application_events import ApplicationEvent, ApplicationEventDelivery, EventStatus
from .rules.models import ChatMessage, FieldStatus, InterviewSession, InterviewState, JobDefinition, SessionStatus
from .rules.state_changes import (
    AddAssistantMessage,
    AddUserMessage,
    FinishInterview,
    RecordConsent,
    ReopenField,
    SkipField,
    StateChange,
    apply_change,
    apply_changes,
)

DEFAULT_MAX_TURNS = 100


@dataclass(frozen=True)
class TurnResult:
    session: InterviewSession
    outcome: TurnOutcome
    messages: list[ChatMessage]


@dataclass
class TurnHandover:
    """What handing a turn to the worker takes: its queue, the model's pace (for a turn's expected
    time before this container has timed one) and the turns' times."""

    queue: TurnQueue
    pace: Callable[[], SpeedEstimate]
    times: TurnTimes = field(default_factory=lambda: CONTAINER_TURN_TIMES)

    def expected_s(self) -> float:
        return self.times.expected_s(self.pace())


def new_turn_id(now: datetime) -> str:
    """Sortable by time, unique: RunSteps of a session list in turn order."""
    return f"{int(now.timestamp() * 1000):013d}-{secrets.token_hex(4)}"


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


@dataclass
class InterviewService:
    repository: InterviewRepository
    orchestrator: Orchestrator
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    new_session_id: Callable[[], str] = lambda: uuid.uuid4().hex
    max_turns: int = DEFAULT_MAX_TURNS
    jobs: JobCatalog | None = None
    retention: Retention = field(default_factory=Retention)
    events: ApplicationEventDelivery | None = None
    handover: TurnHandover | None = None  # None: every turn runs in its request
    # The route's answer to a turn, stored with a turn answered after its request for its GET
    # (``views.turn_answer``; passed in, so that the service does not import its views).
    render_answer: Callable[[TurnResult], dict[str, Any]] | None = None
    new_turn_id: Callable[[datetime], str] = new_turn_id
    # The applicant's daily token budget (``spending``): admits a turn before any model call and
    # counts every call of it to the applicant's day; off unless given.
    budget: DailyBudget = field(default_factory=lambda: DailyBudget(None, 0))
    live: LiveChannel = field(default_factory=NoLiveChannel)  # the applicant's open WebSocket connections

    # -- starting --------------------------------------------------------------------------------

    def start(self, user_id: str, job_id: str) -> InterviewSession:
        """A new interview of the latest version of an open job (``JobNotFound`` / ``JobClosed``)."""
        if self.jobs is None:
            raise RuntimeError("InterviewService.start needs a job catalog")
        return self.create(user_id, self.jobs.open_job(job_id))

    def create(self, user_id: str, job: JobDefinition) -> InterviewSession:
        """A new session for a job version already read from the catalog."""
        now = self.clock().isoformat()
        session = InterviewSession(
            session_id=self.new_session_id(),
            user_id=user_id,
            job=job,
            state=InterviewState.initial(job),
            version=0,
            message_count=0,
            created_at=now,
            updated_at=now,
        )
        self.repository.create(session)
        return session

    def notice(self, session: InterviewSession) -> Notice:
        return notice_for(session.job, self.retention)

    def consent(self, user_id: str, session_id: str, notice_id: str) -> InterviewSession:
        """Record the applicant's consent to the notice in force; a repeated consent changes nothing."""
        session = self.get(user_id, session_id).session
        current = self.notice(session).notice_id
        if notice_id != current:
            raise NoticeChanged(f"the notice in force is {current}: show it and consent to it")
        if session.state.consent is not None:
            return session
        return self._commit(session, [RecordConsent(notice_id, self.clock().isoformat())])

    # -- reading ---------------------------------------------------------------------------------

    def get(self, user_id: str, session_id: str) -> StoredInterview:
        stored = self.repository.load(session_id)
        if stored is None or stored.session.user_id != user_id:
            raise SessionNotFound(f"no interview {session_id!r}")
        return stored

    # -- turns -----------------------------------------------------------------------------------

    def post_message(
        self,
        user_id: str,
        session_id: str,
        text: str,
        deadline: Deadline | None = None,
        idempotency_record: str | None = None,
        *,
        prefer_later: bool = False,
        time_zone: str | None = None,
    ) -> TurnResult | TurnAccepted:
        stored = self._for_a_turn(user_id, session_id)
        if stored.session.state.finished:
            raise InterviewFinished(
                f"the interview is {stored.session.state.status.value}: it takes no further messages"
            )
        turn = self._pending(stored, "message", text, None, idempotency_record)
        return self._answer(stored, turn, deadline, prefer_later, time_zone)

    def correct(
        self,
        user_id: str,
        session_id: str,
        field_id: str,
        text: str,
        deadline: Deadline | None = None,
        idempotency_record: str | None = None,
        *,
        prefer_later: bool = False,
        time_zone: str | None = None,
    ) -> TurnResult | TurnAccepted:
        """The applicant's corrected answer to a done or skipped field, reviewed in this turn."""
        stored = self._for_a_turn(user_id, session_id)
        status = _field_status(stored.session, field_id)
        if not status.settled:
            raise FieldActionRefused(
                f"{field_id} is {status.value}: only a done or skipped field can be corrected; answer its "
                "question with a message instead",
                code="FIELD_NOT_FINISHED",
            )
        turn = self._pending(stored, "correction", text, field_id, idempotency_record)
        return self._answer(stored, turn, deadline, prefer_later, time_zone)

    # -- turns answered after their request --------------------------------------------------

    def run_pending(
        self, user_id: str, session_id: str, turn_id: str, deadline: Deadline | None, admission: Admission | None = None
    ) -> TurnResult | None:
        """The worker's part: run the turn the session's mark holds, and commit it with its reply
        stored for the client. None when there is nothing to run (withdrawn, committed already, no
        such turn of this user's) or nothing to commit it to (withdrawn while it ran). An accepted
        turn is never refused by the budget; its calls count to ``admission``'s day (the request's),
        and the run that commits it gives the request's reservation back."""
        admission = admission or self.budget.accepted(user_id, None, 0)
        spent = _Spent()
        try:
            result = self._run_pending(user_id, session_id, turn_id, deadline, spent)
        except Exception as error:
            self.budget.settle(admission, spent.tokens or _tokens_of(error), reservation_done=False)
            raise
        self.budget.settle(admission, spent.tokens, reservation_done=result is not None)
        return result

    def _run_pending(
        self, user_id: str, session_id: str, turn_id: str, deadline: Deadline | None, spent: _Spent
    ) -> TurnResult | None:
        stored = self.repository.load(session_id)
        if stored is None or stored.session.user_id != user_id:
            _needs_no_run(session_id, turn_id, "no such interview of this user (withdrawn meanwhile)")
            return None
        turn = stored.pending
        if turn is None or turn.turn_id != turn_id:
            _needs_no_run(session_id, turn_id, "no such turn pending (committed already, or another turn)")
            return None
        try:
            return self._turn(stored, turn, deadline, handed_over=True, spent=spent)
        except VersionConflict:
            # Refused at the commit: withdrawn meanwhile (the applicant's right at any moment), or
            # the mark is no longer this turn's. Either way it can never commit: a normal end, not
            # a failure to run it again.
            now = self.repository.load(session_id)
            if now is not None and now.pending is not None and now.pending.turn_id == turn_id:
                raise
            _needs_no_run(session_id, turn_id, "withdrawn or committed by another delivery while it ran")
            return None

    def give_up_pending(self, session_id: str, turn_id: str, reason: str, admission: Admission | None = None) -> None:
        """The worker's last delivery failed: the turn's outcome is a failure the client reads as
        503 (send the message again), and the session takes messages again; the request's
        reservation is given back (what the failed runs spent was counted as they ended)."""
        self.repository.release_pending(session_id, turn_id, {"status": "failed", "reason": reason[:64]})
        if admission is not None:
            self.budget.settle(admission, 0)
            # The applicant's open connections hear what GET of the turn answers (503: send it again).
            message = "the turn could not be answered (the model provider kept failing): send it again"
            frame = error_frame(TurnFailed.code, message, session_id=session_id, seq=turn_id)
            self.live.send(admission.user_id, frame)

    def turn_outcome(self, user_id: str, session_id: str, turn_id: str) -> dict[str, Any] | TurnAccepted:
        """A handed-over turn's reply (the message route's answer), or ``TurnAccepted`` while it runs."""
        stored = self.get(user_id, session_id)
        outcome = self.repository.turn_record(session_id, turn_id)
        if outcome is None:
            if stored.pending is not None and stored.pending.turn_id == turn_id:
                return TurnAccepted(session_id, turn_id, 0.0)
            raise TurnNotFound(f"no turn {turn_id[:32]!r} of interview {session_id!r}")
        if outcome.get("status") != "answered":
            raise TurnFailed("the turn could not be answered (the model provider kept failing): send it again")
        answer: dict[str, Any] = outcome["answer"]
        return answer

    def _for_a_turn(self, user_id: str, session_id: str) -> StoredInterview:
        stored = self.get(user_id, session_id)
        _require_consent(stored.session)
        self._refuse_while_pending(stored)
        return stored

    def _refuse_while_pending(self, stored: StoredInterview) -> None:
        """A turn with the worker holds the session: any change now (a message, a correction, a
        skip) could only be refused at its write, so it is refused here with the reason to wait."""
        pending = stored.pending
        if pending is not None and not self._stale(pending):
            raise TurnInProgress("a turn of this interview is still being answered: wait for its reply")

    def _stale(self, pending: PendingTurn) -> bool:
        since = datetime.fromisoformat(pending.since)
        return (self.clock() - since).total_seconds() > PENDING_TURN_STALE_S

    def _pending(
        self, stored: StoredInterview, kind: TurnKind, text: str, field_id: str | None, record: str | None
    ) -> PendingTurn:
        now = self.clock()
        return PendingTurn(
            turn_id=self.new_turn_id(now),
            kind=kind,
            text=text,
            field_id=field_id,
            idempotency_record=record,
            since=now.isoformat(),
        )

    def _answer(
        self,
        stored: StoredInterview,
        turn: PendingTurn,
        deadline: Deadline | None,
        prefer_later: bool,
        time_zone: str | None = None,
    ) -> TurnResult | TurnAccepted:
        """The turn in this request, or handed to the worker: when the client prefers it, when this
        container's turns take longer than the time left, or when the deadline cuts it anyway. The
        applicant's daily budget admits it first, before any model call or write (429
        DAILY_BUDGET_EXCEEDED)."""
        admission = self.budget.admit(stored.session.user_id, time_zone, _reservation(turn.text))
        handover = self.handover
        if handover is None:
            return self._counted(admission, lambda spent: self._turn(stored, turn, deadline, spent=spent))
        expected = handover.expected_s()
        fits = deadline is None or expected <= deadline.remaining_s()
        started = time.monotonic()

        def answer_now() -> TurnResult:
            result = self._counted(
                admission, lambda spent: self._turn(stored, turn, deadline, cut_is_handover=True, spent=spent)
            )
            handover.times.record(time.monotonic() - started)
            return result

        def hand_over() -> TurnAccepted:
            # A turn the deadline cut took at least what it ran for: the worker runs it whole.
            try:
                return self._hand_over(stored, turn, max(expected, time.monotonic() - started), admission)
            except TurnFailed:
                self.budget.settle(admission, 0)  # nobody will run it: the reservation goes back
                raise

        return now_or_later(answer_now, hand_over, later=answer_later(prefer_later=prefer_later, fits=fits))

    def _counted(self, admission: Admission, run: Callable[[_Spent], TurnResult]) -> TurnResult:
        """``run`` with every model call it made counted to the applicant's day; a turn the
        deadline cut (``CutShort``) keeps its reservation for the worker."""
        spent = _Spent()
        try:
            result = run(spent)
        except CutShort as cut:
            self.budget.settle(admission, cut.spent_tokens, reservation_done=False)
            raise
        except Exception as error:
            self.budget.settle(admission, spent.tokens or _tokens_of(error))
            raise
        self.budget.settle(admission, spent.tokens)
        return result

    def _hand_over(
        self, stored: StoredInterview, turn: PendingTurn, expected_s: float, admission: Admission
    ) -> TurnAccepted:
        assert self.handover is not None
        session = stored.session
        self.repository.mark_pending(session.session_id, session.user_id, session.version, turn)
        try:
            self.handover.queue.send(
                TurnMessage(
                    session_id=session.session_id,
                    user_id=session.user_id,
                    turn_id=turn.turn_id,
                    spending_day=admission.day if self.budget.on else None,
                    reserved_tokens=admission.reserved,
                )
            )
        except Exception as error:
            # Not handed over: lift the mark, so the applicant can send the message again (503).
            self.repository.release_pending(session.session_id, turn.turn_id, None)
            raise TurnFailed(f"the turn could not be handed over ({type(error).__name__}): send it again") from error
        return TurnAccepted(session.session_id, turn.turn_id, expected_s)

    def skip(self, user_id: str, session_id: str, field_id: str) -> InterviewSession:
        stored = self.get(user_id, session_id)
        session = stored.session
        _require_consent(session)
        self._refuse_while_pending(stored)
        status = _field_status(session, field_id)
        if session.state.finished:
            raise InterviewFinished(f"the interview is {session.state.status.value}: correct a field instead")
        if session.job.field(field_id).required:
            raise FieldActionRefused(f"{field_id} is required: it cannot be skipped", code="FIELD_REQUIRED")
        if status not in (FieldStatus.PENDING, FieldStatus.INTERVIEWING):
            raise FieldActionRefused(
                f"{field_id} is {status.value}: only a field not answered yet can be skipped", code="FIELD_SETTLED"
            )
        return self._commit(session, [SkipField(field_id)])

    # -- withdrawal ------------------------------------------------------------------------------

    def withdraw(self, user_id: str, session_id: str) -> None:
        """Delete everything stored for the interview; a consented application (one the employer
        could see) is announced as withdrawn, so a team that kept a copy deletes it too."""
        stored = self.repository.load(session_id)  # None as well when a withdrawal already began
        event = None
        if stored is not None and stored.session.user_id == user_id and stored.session.state.consent is not None:
            session = stored.session
            event = ApplicationEvent(
                application_id=session.session_id,
                job_id=session.job.job_id,
                job_version=session.job.version,
                status="withdrawn",
                session_version=session.version + 1,
                occurred_at=self.clock().isoformat(),
            )
        outcome = self.repository.withdraw(session_id, user_id, event)
        if not outcome.found:
            raise SessionNotFound(f"no interview {session_id!r}")
        if outcome.to_announce and self.events is not None:
            self.events.deliver(outcome.to_announce)

    # -- internals -------------------------------------------------------------------------------

    def _turn(
        self,
        stored: StoredInterview,
        turn: PendingTurn,
        deadline: Deadline | None,
        *,
        cut_is_handover: bool = False,
        handed_over: bool = False,
        spent: _Spent | None = None,
    ) -> TurnResult:
        session = stored.session
        text, idempotency_record = turn.text, turn.idempotency_record
        opening: list[StateChange] = [ReopenField(turn.field_id)] if turn.field_id is not None else []
        if sum(1 for message in stored.messages if message.role == "user") >= self.max_turns:
            raise TurnLimitReached(f"the interview has taken its {self.max_turns} messages")
        now = self.clock()
        opened = apply_changes(session.state, opening, session.job)
        try:
            outcome = self.orchestrator.process_message(
                OrchestratorInput(
                    session_id=session.session_id,
                    job=session.job,
                    state=opened,
                    chat_history=stored.messages,
                    user_message=text,
                    turn_id=turn.turn_id,
                    deadline=deadline,
                    resumed=handed_over,
                    user_id=session.user_id,
                )
            )
        except DeadlineReached as error:
            if cut_is_handover:
                raise CutShort(error.usage.total_tokens) from None
            raise
        if spent is not None:  # billed whatever happens next (a cut, a refused commit)
            spent.tokens = outcome.usage.total_tokens
        if cut_is_handover and outcome.cut_by_time:
            raise CutShort(outcome.usage.total_tokens)
        state = apply_changes(opened, outcome.changes, session.job)
        messages = messages_from(outcome.changes, session.message_count, now.isoformat())
        reopened = [change.field_id for change in opening if isinstance(change, ReopenField)]
        if reopened and messages and messages[0].role == "user":
            # The transcript says which answer the applicant corrected.
            messages[0] = messages[0].model_copy(update={"data": {"correctionOf": reopened[0]}})
        totals = usage_totals(session.usage_total, outcome)
        updated = session.model_copy(
            update={
                "state": state,
                "version": session.version + 1,
                "message_count": session.message_count + len(messages),
                "usage_total": totals,
                "updated_at": now.isoformat(),
            }
        )
        events = finish_events(updated, outcome.changes, now.isoformat())
        result = TurnResult(updated, outcome, messages)
        commit = TurnCommit(updated, session.version, messages, events, idempotency_record)
        if handed_over:
            if self.render_answer is None:
                raise RuntimeError("a turn answered after its request needs InterviewService.render_answer")
            commit = replace(
                commit, pending_turn_id=turn.turn_id, turn_id=turn.turn_id, answer=self.render_answer(result)
            )
        self.repository.commit_turn(commit)
        if events and self.events is not None:
            self.events.deliver(events)
        # Committed: the applicant's open connections get the reply, from the request or the worker.
        self.live.send(session.user_id, done_frame(session.session_id, turn.turn_id, self._rendered(result)))
        return result

    def _rendered(self, result: TurnResult) -> dict[str, Any]:
        return self.render_answer(result) if self.render_answer is not None else {}

    def _commit(self, session: InterviewSession, changes: list[StateChange]) -> InterviewSession:
        """An applicant action without a turn: the reducer's state, written under the version guard."""
        state = session.state
        for change in changes:
            state = apply_change(state, change, session.job)
        updated = session.model_copy(
            update={"state": state, "version": session.version + 1, "updated_at": self.clock().isoformat()}
        )
        self.repository.commit_turn(TurnCommit(updated, session.version, []))
        return updated


@dataclass
class _Spent:
    """The tokens a turn's model calls were billed for, known once the orchestrator returns."""

    tokens: int = 0


# The first call of a turn as admission reserves it: the agent's instructions, the job's fields and
# the recent transcript (~3,000 tokens at gpt-4o's tokenizer), the message, and the agent's max_tokens.
TURN_PROMPT_ESTIMATE = 3000


def _reservation(text: str) -> int:
    return reservation_estimate(TURN_PROMPT_ESTIMATE + estimate_tokens(text), AGENT_MAX_TOKENS)


def _tokens_of(error: BaseException) -> int:
    """What a failed turn's calls were billed for, when its error says (the engine's errors carry it)."""
    usage = getattr(error, "usage", None)
    return usage.total_tokens if isinstance(usage, Usage) else 0


def _needs_no_run(session_id: str, turn_id: str, reason: str) -> None:
    """A worker's message with nothing to run or commit: a normal end of the turn, logged at INFO
    with the reason (the worker settles its record, ``answered_later.TurnWorker``)."""
    logger.info("interview turn needs no run", extra={"sessionId": session_id, "turnId": turn_id, "reason": reason})


def _require_consent(session: InterviewSession) -> None:
    if session.state.consent is None:
        raise ConsentRequired("the applicant has not accepted the notice yet: consent first")


def _field_status(session: InterviewSession, field_id: str) -> FieldStatus:
    progress = session.state.fields.get(field_id)
    if progress is None:
        raise FieldNotFound(f"the job has no field {field_id[:64]!r}")
    return progress.status


def usage_totals(before: Mapping[str, int | float | None], outcome: TurnOutcome) -> dict[str, int | float | None]:
    """The application's totals after one more turn: its tokens (prompt, completion, total,
    cached) and what its model calls cost (``costUsd``, from the turn's ``ModelAccount``), the
    sum the employer's view shows. A cost some model had no price for stays unknown (None) from
    then on: a partial sum would look like the whole."""
    totals = dict(before)
    turn: dict[str, int] = {**outcome.usage.as_dict(), "cachedTokens": outcome.usage.cached_prompt_tokens}
    for key, value in turn.items():
        totals[key] = int(totals.get(key) or 0) + value
    cost = 0.0 if outcome.account is None else outcome.account.cost_usd
    spent = totals.get("costUsd", 0.0)
    totals["costUsd"] = None if cost is None or spent is None else round(float(spent) + cost, 8)
    return totals
