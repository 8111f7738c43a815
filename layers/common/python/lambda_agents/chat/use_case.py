"""ProcessUserMessageUseCase (docs/chat-and-templates.md#one-chat-turn): one chat turn's request, with nothing lost.

Order of work, and why:
1. The session must be the caller's (another user's answers 404, like a missing one).
2. The user's limits admit the turn before anything is stored (``spending.UserLimits``): the
   per-user rate limit (a sliding window, ``rate_limit``; a 429 leaves no trace, and the client
   retries the same message after Retry-After), then the user's daily token budget, which reserves
   the turn's first call or refuses it (429 ``DAILY_BUDGET_EXCEEDED`` until enough of the user's
   tokens are 24 hours old; the rate-limit place is given back). A message that is then not
   stored (409, 503) gives both back: only accepted ones count. Every attempt's tokens are counted
   to the slot of the turn's admission after the call; a turn handed over keeps its reservation
   for the worker, which counts to the same slot.
3. The user's message is stored BEFORE the model is called (it reserves the next seq for the
   answer, so a turn's two messages are adjacent even when two turns overlap).
4. The answer is produced and stored (``answering.ChatAnswering``: the prompt, the model, the
   answer's one write).

At a real model's pace (``chat.pending``): step 4 runs in the request only when the whole answer
fits in the request's time at the model's learned pace and the client did not ask to be answered
later (``Prefer: respond-async``); otherwise, and when a synchronous answer turns out slower than
planned and the deadline cuts it, the turn is marked pending and handed to the worker
(``worker.PendingAnswers``), and the client gets a ``TurnAccepted``. A queue that does not take
the turn stores the fallback answer at once: nothing is lost and the client is told the truth.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from ..answered_later import CutShort, Handover, TurnAccepted, answer_later, now_or_later
from ..llm.policy import Deadline
from ..observability import logger
from ..spending import Admission, UserLimits
from .answering import ChatAnswering, ProcessMessageInput, iso
from .pending import MessageNotFound, PendingTurn, answer_accepted
from .records import SessionContext, SessionNotFound, SessionRecord
from .replies import ProcessMessageResult
from .store import UserMessage


@dataclass
class ProcessUserMessageUseCase:
    answering: ChatAnswering
    limits: UserLimits
    handover: Handover[PendingTurn] | None = None  # None: every turn is answered in the request
    new_id: Callable[[], str] = lambda: uuid.uuid4().hex

    def start_session(self, user_id: str, context: SessionContext) -> SessionRecord:
        now = self.answering.clock()
        session = SessionRecord(self.new_id(), user_id, context, iso(now), template_seed=secrets.token_hex(16))
        self.answering.store.create_session(session, self.answering.expires_at(now))
        return session

    def execute(
        self, request: ProcessMessageInput, deadline: Deadline | None = None, *, prefer_later: bool = False
    ) -> ProcessMessageResult | TurnAccepted:
        """One turn: answered now, or accepted for the worker (see the module docstring)."""
        session = self._session(request.user_id, request.session_id)
        handover = self.handover
        expected = 0.0 if handover is None else handover.expected_s()
        later = handover is not None and answer_later(prefer_later=prefer_later, expected_s=expected, deadline=deadline)
        admission = self.limits.admit(request.user_id, self.answering.reservation(session, request))
        now = self.answering.clock()
        sent = UserMessage(
            request.message,
            iso(now),
            self.answering.expires_at(now),
            request.idempotency_key,
            request.client_message_id,
        )
        try:
            user_seq = self.answering.store.append_user_message(session, sent)
        except Exception:
            self.limits.not_accepted(admission)  # a concurrent change (409), storage busy (503)
            raise

        def answer_now() -> ProcessMessageResult:
            # Slower than planned, the answer is cut (CutShort): the worker has the time to answer it whole.
            keep_partial = handover is None
            return self.limits.in_request(
                admission,
                lambda spent: self.answering.answer(
                    session, request, user_seq, deadline, keep_partial=keep_partial, spent=spent
                ),
            )

        return now_or_later(
            answer_now, lambda cut: self._hand_over(session, request, user_seq, expected, admission, cut), later=later
        )

    def read_answer(self, user_id: str, session_id: str, answer_seq: int) -> ProcessMessageResult | TurnAccepted:
        """The answer of seq ``answer_seq`` as the message route answers it, or the turn still pending."""
        self._session(user_id, session_id)
        stored = self.answering.store.turn(session_id, answer_seq - 1)
        answer = stored.answer
        if answer is None or answer.role != "assistant":
            if stored.message is not None and stored.message.role == "user" and stored.pending:
                return answer_accepted(session_id, answer_seq - 1, 0.0)
            raise MessageNotFound(f"no answer {answer_seq} in session {session_id!r}")
        recent = self.answering.store.recent_messages(session_id, self.answering.settings.conversation_limit)
        return ProcessMessageResult.stored(answer, recent, stored.audit or {})

    def _session(self, user_id: str, session_id: str) -> SessionRecord:
        session = self.answering.store.get_session(session_id)
        if session is None or session.user_id != user_id:
            raise SessionNotFound(session_id)
        return session

    def _hand_over(
        self,
        session: SessionRecord,
        request: ProcessMessageInput,
        user_seq: int,
        expected_s: float,
        admission: Admission,
        cut: CutShort | None,
    ) -> ProcessMessageResult | TurnAccepted:
        assert self.handover is not None
        turn = PendingTurn(
            session_id=session.session_id,
            user_id=request.user_id,
            user_seq=user_seq,
            spent_before=None if cut is None else cut.spent_before(),
            **admission.message_fields(),
        )
        try:
            self.answering.store.mark_answer_pending(session.session_id, user_seq, iso(self.answering.clock()))
            self.handover.queue.send(turn)
        except Exception as error:
            # Not handed over: the turn is answered now with the fallback answer, so it is not left waiting.
            logger.warning("chat turn not handed to the worker", extra={"error_type": type(error).__name__})
            self.limits.give_back(admission)
            return self.answering.fallback(session, request, user_seq, "queue_unavailable", "")
        logger.info("chat turn handed to the worker", extra={"session_id": session.session_id, "seq": user_seq})
        return answer_accepted(session.session_id, user_seq, expected_s)
