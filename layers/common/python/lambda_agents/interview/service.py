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

Where a turn runs, in the request and in the worker alike, is ``turn_runner``. At a real model's
pace a turn may not fit in API Gateway's 29 s (``pending_turns``): with a ``handover`` configured,
a turn expected to outlast the request, one the client prefers to read later, and one the deadline
cuts anyway are handed to the worker instead of being committed with a "please send again" reply;
``run_pending`` and ``give_up`` are the worker's part, ``turn_outcome`` the client's read. The
applicant's daily budget (``spending.UserLimits``) admits each turn before any model call or write
and counts every call of it, in the request and in the worker.
"""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypedDict, Unpack

from ..answered_later import CutShort, Handover, TurnAccepted, answer_later, now_or_later
from ..live import LiveChannel, NoLiveChannel, error_frame
from ..llm import Deadline
from ..llm.accounting import ModelAccount
from ..llm.shared_learning import SharedLearning
from ..llm.types import estimate_tokens
from ..observability import logger
from ..spending import Admission, DailyBudget, Spent, UserLimits, reservation_estimate
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
    TurnNotFound,
    VersionConflict,
)
from .paid_calls import TurnCallBook, TurnCallRecords, paid_calls, record_paid_calls
from .pending_turns import PENDING_TURN_STALE_S, PendingTurn, TurnKind, TurnMessage, turn_accepted
from .repository import InterviewRepository, StoredInterview, TurnCommit
from .rules.application_events import ApplicationEvent, ApplicationEventDelivery
from .rules.models import AgentName, FieldStatus, InterviewSession, InterviewState, JobDefinition
from .rules.state_changes import RecordConsent, SkipField, StateChange, apply_change
from .turn_runner import TurnAgents, TurnResult, TurnRunner

DEFAULT_MAX_TURNS = 100
# The first call of a turn as admission reserves it: the agent's instructions, the job's fields and
# the recent transcript (~3,000 tokens at gpt-4o's tokenizer), the message, and the agent's max_tokens.
TURN_PROMPT_ESTIMATE = 3000
TURN_FAILED = "the turn could not be answered (the model provider kept failing): send it again"


def new_turn_id(now: datetime) -> str:
    """Sortable by time, unique: RunSteps of a session list in turn order."""
    return f"{int(now.timestamp() * 1000):013d}-{secrets.token_hex(4)}"


class TurnOptions(TypedDict, total=False):
    """How a turn was asked for: the retry record its answer is kept under (``Idempotency-Key``),
    and whether the client prefers to read it later (``Prefer: respond-async``)."""

    idempotency_record: str | None
    prefer_later: bool


@dataclass
class InterviewService:
    repository: InterviewRepository
    orchestrator: TurnAgents
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    new_session_id: Callable[[], str] = lambda: uuid.uuid4().hex
    max_turns: int = DEFAULT_MAX_TURNS
    jobs: JobCatalog | None = None
    retention: Retention = field(default_factory=Retention)
    events: ApplicationEventDelivery | None = None
    handover: Handover[TurnMessage] | None = None  # None: every turn runs in its request
    # The route's answer to a turn, stored with a turn answered after its request for its GET
    # (``views.turn_answer``; passed in, so that the service does not import its views).
    render_answer: Callable[[TurnResult], dict[str, Any]] | None = None
    new_turn_id: Callable[[datetime], str] = new_turn_id
    # The applicant's daily token budget: admits a turn before any call, counts each; off unless given.
    limits: UserLimits = field(default_factory=lambda: UserLimits(DailyBudget(None, 0)))
    live: LiveChannel = field(default_factory=NoLiveChannel)  # the applicant's open WebSocket connections
    # What a handed-over turn's request was given by the model, for its worker (``paid_calls``).
    paid_calls: TurnCallRecords | None = None
    # What the worker learns of the model (its pace, each purpose's output size), shared with the request.
    learned: SharedLearning | None = None

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
        self, user_id: str, session_id: str, text: str, deadline: Deadline | None = None, **how: Unpack[TurnOptions]
    ) -> TurnResult | TurnAccepted:
        stored = self._for_a_turn(user_id, session_id)
        if stored.session.state.finished:
            raise InterviewFinished(
                f"the interview is {stored.session.state.status.value}: it takes no further messages"
            )
        return self._answer(stored, self._pending("message", text, None, how), deadline, how)

    def correct(
        self,
        user_id: str,
        session_id: str,
        field_id: str,
        text: str,
        deadline: Deadline | None = None,
        **how: Unpack[TurnOptions],
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
        return self._answer(stored, self._pending("correction", text, field_id, how), deadline, how)

    @property
    def runner(self) -> TurnRunner:
        """Where a turn runs (``turn_runner``), on this service's ports."""
        return TurnRunner(
            self.repository,
            self.orchestrator,
            self.clock,
            self.max_turns,
            self.events,
            self.render_answer,
            self.live,
        )

    # -- turns answered after their request --------------------------------------------------

    def run_pending(self, message: TurnMessage, deadline: Deadline | None) -> TurnResult | None:
        """The worker's part: run the turn the session's mark holds, and commit it with its reply
        stored for the client. None when there is nothing to run (withdrawn, committed already, no
        such turn of this user's) or nothing to commit it to (withdrawn while it ran). An accepted
        turn is never refused by the budget; its calls count to the request's day. What the run
        learned of the model is shared with the request, whatever its end."""
        try:
            return self.limits.in_worker(
                self.limits.carried(message), lambda spent: self._run(message, deadline, spent)
            )
        finally:
            if self.learned is not None:
                self.learned.publish()

    def _run(self, message: TurnMessage, deadline: Deadline | None, spent: Spent) -> TurnResult | None:
        session_id, turn_id = message.session_id, message.turn_id
        stored = self.repository.load(session_id)
        if stored is None or stored.session.user_id != message.user_id:
            _needs_no_run(session_id, turn_id, "no such interview of this user (withdrawn meanwhile)")
            return None
        turn = stored.pending
        if turn is None or turn.turn_id != turn_id:
            _needs_no_run(session_id, turn_id, "no such turn pending (committed already, or another turn)")
            return None
        try:
            before = None if message.spent_before is None else ModelAccount.from_dict(message.spent_before)
            calls = paid_calls(self.paid_calls, session_id, turn_id, stored.session.version)
            return self.runner.run(stored, turn, deadline, spent, handed_over=True, spent_before=before, calls=calls)
        except VersionConflict:
            # Refused at the commit: withdrawn meanwhile (the applicant's right at any moment), or
            # the mark is no longer this turn's. Either way it can never commit: a normal end, not
            # a failure to run it again.
            now = self.repository.load(session_id)
            if now is not None and now.pending is not None and now.pending.turn_id == turn_id:
                raise
            _needs_no_run(session_id, turn_id, "withdrawn or committed by another delivery while it ran")
            return None

    def give_up(self, message: TurnMessage, error: Exception) -> None:
        """The worker's last delivery failed: the turn's outcome is a failure the client reads as
        503 (send the message again), and the session takes messages again; the request's
        reservation is given back first, whatever storing the failure does (what the failed runs
        spent was counted as they ended; the ledger gives a reservation back once)."""
        reason = str(getattr(error, "kind", None) or type(error).__name__)  # the model failure's kind
        self.limits.give_back(self.limits.carried(message))
        self.repository.release_pending(
            message.session_id, message.turn_id, {"status": "failed", "reason": reason[:64]}
        )
        # The applicant's open connections hear what GET of the turn answers (503: send it again).
        frame = error_frame(TurnFailed.code, TURN_FAILED, session_id=message.session_id, seq=message.turn_id)
        self.live.send(message.user_id, frame)

    def turn_outcome(self, user_id: str, session_id: str, turn_id: str) -> dict[str, Any] | TurnAccepted:
        """A handed-over turn's reply (the message route's answer), or ``TurnAccepted`` while it runs."""
        stored = self.get(user_id, session_id)
        outcome = self.repository.turn_record(session_id, turn_id)
        if outcome is None:
            if stored.pending is not None and stored.pending.turn_id == turn_id:
                return turn_accepted(session_id, turn_id, 0.0)
            raise TurnNotFound(f"no turn {turn_id[:32]!r} of interview {session_id!r}")
        if outcome.get("status") != "answered":
            raise TurnFailed(TURN_FAILED)
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

    def _pending(self, kind: TurnKind, text: str, field_id: str | None, how: TurnOptions) -> PendingTurn:
        now = self.clock()
        return PendingTurn(
            turn_id=self.new_turn_id(now),
            kind=kind,
            text=text,
            field_id=field_id,
            idempotency_record=how.get("idempotency_record"),
            since=now.isoformat(),
        )

    def _answer(
        self, stored: StoredInterview, turn: PendingTurn, deadline: Deadline | None, how: TurnOptions
    ) -> TurnResult | TurnAccepted:
        """The turn in this request, or handed to the worker: when the client prefers it, when this
        container's turns take longer than the time left, or when the deadline cuts it anyway. The
        applicant's daily budget admits it first, before any model call or write (429
        DAILY_BUDGET_EXCEEDED)."""
        from .agents.loop import AGENT_MAX_TOKENS  # the agents: imported when a turn runs

        reservation = reservation_estimate(TURN_PROMPT_ESTIMATE + estimate_tokens(turn.text), AGENT_MAX_TOKENS)
        admission = self.limits.admit(stored.session.user_id, reservation)
        handover = self.handover
        if handover is None:
            return self.limits.in_request(admission, lambda spent: self.runner.run(stored, turn, deadline, spent))
        expected = handover.expected_s()
        later = answer_later(prefer_later=how.get("prefer_later", False), expected_s=expected, deadline=deadline)
        started = time.monotonic()
        calls = TurnCallBook()

        def answer_now() -> TurnResult:
            result = self.limits.in_request(
                admission,
                lambda spent: self.runner.run(stored, turn, deadline, spent, cut_is_handover=True, calls=calls),
            )
            handover.times.record(time.monotonic() - started)
            return result

        def hand_over(cut: CutShort | None) -> TurnAccepted:
            # A turn the deadline cut took at least what it ran for: the worker runs it whole.
            try:
                taken = max(expected, time.monotonic() - started)
                return self._hand_over(stored, turn, taken, admission, cut, None if cut is None else calls)
            except Exception:
                # Not marked (the session changed, storage busy) or not queued: nobody will run it.
                self.limits.give_back(admission)
                raise

        return now_or_later(answer_now, hand_over, later=later)

    def _hand_over(
        self,
        stored: StoredInterview,
        turn: PendingTurn,
        expected_s: float,
        admission: Admission,
        cut: CutShort | None,
        calls: TurnCallBook | None,
    ) -> TurnAccepted:
        assert self.handover is not None
        session = stored.session
        self.repository.mark_pending(session.session_id, session.user_id, session.version, turn)
        # Before the queue has it: the worker may run the turn at once.
        record_paid_calls(self.paid_calls, calls, session.session_id, turn.turn_id, session.version)
        try:
            message = TurnMessage(
                session_id=session.session_id,
                user_id=session.user_id,
                turn_id=turn.turn_id,
                spent_before=None if cut is None else cut.spent_before(),
                **admission.message_fields(),
            )
            self.handover.queue.send(message)
        except Exception as error:
            # Not handed over: lift the mark, so the applicant can send the message again (503).
            self.repository.release_pending(session.session_id, turn.turn_id, None)
            raise TurnFailed(f"the turn could not be handed over ({type(error).__name__}): send it again") from error
        made = 0 if calls is None else calls.made_of(agent.purpose for agent in AgentName)
        return turn_accepted(session.session_id, turn.turn_id, expected_s, model_calls=made)

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


def _needs_no_run(session_id: str, turn_id: str, reason: str) -> None:
    """A worker's message with nothing to run or commit: a normal end of the turn, logged at INFO
    with the reason (the worker is done with its record, ``answered_later.TurnWorker``)."""
    logger.info("interview turn needs no run", extra={"sessionId": session_id, "turnId": turn_id, "reason": reason})


def _require_consent(session: InterviewSession) -> None:
    if session.state.consent is None:
        raise ConsentRequired("the applicant has not accepted the notice yet: consent first")


def _field_status(session: InterviewSession, field_id: str) -> FieldStatus:
    progress = session.state.fields.get(field_id)
    if progress is None:
        raise FieldNotFound(f"the job has no field {field_id[:64]!r}")
    return progress.status
