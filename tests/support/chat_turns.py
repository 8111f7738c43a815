"""A chat session's turns on in-memory ports, a scripted model and a hand-moved clock, built as the
product's bootstrap (``bootstrap.chat``) wires them: the request's use case and the worker's part on
one ``ChatAnswering``. The arrangement every chat unit test shares, written once."""

from __future__ import annotations

from typing import Any

from lambda_agents.answered_later import Handover, TurnAccepted
from lambda_agents.chat.answering import ChatAnswering, ChatSettings, ProcessMessageInput
from lambda_agents.chat.audit import AuditHasher
from lambda_agents.chat.conversation import AIConversationService, ConversationPolicy
from lambda_agents.chat.pending import PendingTurn, answer_times
from lambda_agents.chat.records import MessageKind, SessionContext, StoredMessage
from lambda_agents.chat.replies import ProcessMessageResult
from lambda_agents.chat.use_case import ProcessUserMessageUseCase
from lambda_agents.chat.worker import PendingAnswers
from lambda_agents.llm import ChatModel, Deadline
from lambda_agents.llm.speeds import CONTAINER_SPEEDS, ModelSpeeds
from lambda_agents.spending import DailyBudget, UserLimits

from tests.support.memory_chat import CountingLimiter, InMemoryChatStore
from tests.support.recording_queue import RecordingQueue
from tests.unit.llm.scripted_model import FakeClock

USER = "user-1"
PROCESS = SessionContext(processType="中途採用")


class ChatTurns:
    """``queue``: the worker's (None: every turn is answered in the request); ``budget``: the
    user's daily budget (off unless given); ``speeds``: the container's learned paces."""

    def __init__(
        self,
        model: ChatModel,
        *,
        store: InMemoryChatStore | None = None,
        queue: RecordingQueue[PendingTurn] | None = None,
        budget: DailyBudget | None = None,
        limit: int = 1000,
        salt: str | None = None,
        speeds: ModelSpeeds = CONTAINER_SPEEDS,
        context: SessionContext = PROCESS,
    ) -> None:
        self.store = store or InMemoryChatStore()
        self.clock = FakeClock()
        self.model: Any = model
        self.limiter = CountingLimiter(limit)
        self.queue = queue
        policy = ConversationPolicy()
        conversation = AIConversationService(model, policy, sleep=self.clock.sleep, timer=self.clock, speeds=speeds)
        answering = ChatAnswering(self.store, conversation, AuditHasher(salt), ChatSettings())
        budget = budget or DailyBudget(None, 0)
        handover = None if queue is None else Handover(queue, conversation.pace, answer_times(policy.max_tokens))
        self.use_case = ProcessUserMessageUseCase(answering, UserLimits(budget, self.limiter), handover)
        self.worker = PendingAnswers(answering, UserLimits(budget))
        self.session = self.use_case.start_session(USER, context)

    def send(
        self,
        message: str,
        deadline: Deadline | None = None,
        *,
        user: str = USER,
        later: bool = False,
    ) -> ProcessMessageResult | TurnAccepted:
        request = ProcessMessageInput(self.session.session_id, user, message)
        return self.use_case.execute(request, deadline, prefer_later=later)

    @property
    def stored(self) -> list[StoredMessage]:
        return self.store.messages.get(self.session.session_id, [])

    def kinds(self) -> list[tuple[int, str, MessageKind]]:
        return [(m.seq, m.role, m.kind) for m in self.stored]
