"""The worker's part of a chat turn answered after its request (ChatAnswerFunction;
docs/chat-and-templates.md#answers-that-do-not-fit-in-a-request): the same prompt built from the
history before the message, the answer stored through the same one write (``answering``), exactly
once; an answer its own deadline cuts is stored as a truncated answer. Its tokens count to the budget's
slot of the request, whose reservation the delivery that stores the answer gives back
(``spending.UserLimits.in_worker``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..llm.accounting import ModelAccount
from ..llm.policy import Deadline
from ..llm.shared_learning import SharedLearning
from ..observability import logger
from ..spending import Spent, UserLimits
from .answering import ChatAnswering, ProcessMessageInput
from .pending import PendingTurn
from .records import SessionRecord, StoredMessage
from .replies import ProcessMessageResult
from .store import AnswerExists, SessionGone


@dataclass
class PendingAnswers:
    """ChatAnswerFunction's ``answered_later.PendingTurns``."""

    answering: ChatAnswering
    limits: UserLimits
    learned: SharedLearning | None = None  # what this worker learns of the pace, shared with the request

    def run_pending(self, turn: PendingTurn, deadline: Deadline | None) -> ProcessMessageResult | None:
        """Answer a pending turn, once. None when there is nothing to answer (``_waiting``), or when
        the session was deleted while the model answered. Accepted turns are answered, never refused."""
        try:
            return self.limits.in_worker(self.limits.carried(turn), lambda spent: self._answer(turn, deadline, spent))
        finally:
            if self.learned is not None:
                self.learned.publish()

    def give_up(self, turn: PendingTurn, error: Exception) -> ProcessMessageResult | None:
        """The fallback answer for a pending turn the worker could not answer on its last delivery:
        no turn stays pending for ever; the turn ends without a model answer, so its reservation goes
        back, whether the fallback is stored or has nowhere to go (the ledger gives it back once)."""
        self.limits.give_back(self.limits.carried(turn))
        waiting = self._waiting(turn)
        if waiting is None:
            return None
        session, message = waiting
        request = ProcessMessageInput(turn.session_id, turn.user_id, message.content)
        model = self.answering.conversation.model.model_name
        return self._once(
            session, turn, lambda: self.answering.fallback(session, request, turn.user_seq, "worker_failed", model)
        )

    def _answer(self, turn: PendingTurn, deadline: Deadline | None, spent: Spent) -> ProcessMessageResult | None:
        waiting = self._waiting(turn)
        if waiting is None:
            return None
        session, message = waiting
        request = ProcessMessageInput(turn.session_id, turn.user_id, message.content)
        before = None if turn.spent_before is None else ModelAccount.from_dict(turn.spent_before)
        return self._once(
            session,
            turn,
            lambda: self.answering.answer(
                session, request, turn.user_seq, deadline, keep_partial=True, spent=spent, spent_before=before
            ),
        )

    def _once(
        self, session: SessionRecord, turn: PendingTurn, write: Callable[[], ProcessMessageResult]
    ) -> ProcessMessageResult | None:
        """The worker's write of the answer; None when there is nowhere to write it any more: another
        delivery answered the turn, or the user deleted the session meanwhile (a normal end, not a
        failure to deliver again)."""
        try:
            return write()
        except AnswerExists:
            reason = "answered by another delivery"
        except SessionGone:
            reason = "session deleted while it was answered"
        logger.info(
            "chat turn needs no answer",
            extra={"session_id": session.session_id, "seq": turn.user_seq, "reason": reason},
        )
        return None

    def _waiting(self, turn: PendingTurn) -> tuple[SessionRecord, StoredMessage] | None:
        """The session and the user's message ``turn`` names while that message waits for the
        worker's answer; otherwise None, with the reason logged. A queue message is input like any
        other: one that names an answer, a message answered already or one never handed over must
        neither call the model nor write (an answer past the session's count would refuse every
        later message of the session)."""
        store = self.answering.store
        session = store.get_session(turn.session_id)
        if session is None or session.user_id != turn.user_id:
            reason = "no such session of this user (deleted meanwhile)"
        else:
            stored = store.turn(turn.session_id, turn.user_seq)
            if stored.message is None or stored.message.role != "user":
                reason = "no user's message of that seq"
            elif stored.answer is not None:
                reason = "answered already"
            elif not stored.pending:
                reason = "not handed to the worker"
            else:
                return session, stored.message
        logger.info(
            "chat turn needs no answer", extra={"session_id": turn.session_id, "seq": turn.user_seq, "reason": reason}
        )
        return None
