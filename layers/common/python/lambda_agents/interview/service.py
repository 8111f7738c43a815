"""What the API layer calls (spec 003 "API Layer"): read the session, call the Orchestrator,
persist its ``StateChange`` list through the repository.

One applicant turn is written as one unit, guarded by the session's ``version`` (optimistic
locking): the new state (the loaded state with the turn's changes applied by the same reducer
the agents used), the applicant's message and the reply. Two turns of one session that ran at
once cannot both be stored: the second write is refused (``VersionConflict``) and nothing of
its turn is written, so no update is lost and nothing is half-written. Sessions belong to the
user who created them; another user's session is "not found".
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from ..llm import Deadline
from .errors import InterviewFinished, SessionNotFound, TurnLimitReached
from .models import ChatMessage, InterviewSession, InterviewState, JobDefinition
from .orchestrator import Orchestrator, OrchestratorInput, TurnOutcome
from .repository import InterviewRepository, StoredInterview, TurnCommit
from .state_changes import AddAssistantMessage, AddUserMessage, StateChange, apply_changes

DEFAULT_MAX_TURNS = 100


@dataclass(frozen=True)
class TurnResult:
    session: InterviewSession
    outcome: TurnOutcome
    messages: list[ChatMessage]


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


@dataclass
class InterviewService:
    repository: InterviewRepository
    orchestrator: Orchestrator
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    new_session_id: Callable[[], str] = lambda: uuid.uuid4().hex
    max_turns: int = DEFAULT_MAX_TURNS

    def create(self, user_id: str, job: JobDefinition) -> InterviewSession:
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

    def get(self, user_id: str, session_id: str) -> StoredInterview:
        stored = self.repository.load(session_id)
        if stored is None or stored.session.user_id != user_id:
            raise SessionNotFound(f"no interview {session_id!r}")
        return stored

    def post_message(self, user_id: str, session_id: str, text: str, deadline: Deadline | None = None) -> TurnResult:
        stored = self.get(user_id, session_id)
        session = stored.session
        if session.state.finished:
            raise InterviewFinished(f"the interview is {session.state.status.value}: it takes no further messages")
        if sum(1 for message in stored.messages if message.role == "user") >= self.max_turns:
            raise TurnLimitReached(f"the interview has taken its {self.max_turns} messages")
        now = self.clock()
        outcome = self.orchestrator.process_message(
            OrchestratorInput(
                session_id=session_id,
                job=session.job,
                state=session.state,
                chat_history=stored.messages,
                user_message=text,
                turn_id=new_turn_id(now),
                deadline=deadline,
            )
        )
        state = apply_changes(session.state, outcome.changes, session.job)
        messages = messages_from(outcome.changes, session.message_count, now.isoformat())
        totals = dict(session.usage_total)
        for key, value in outcome.usage.as_dict().items():
            totals[key] = totals.get(key, 0) + value
        updated = session.model_copy(
            update={
                "state": state,
                "version": session.version + 1,
                "message_count": session.message_count + len(messages),
                "usage_total": totals,
                "updated_at": now.isoformat(),
            }
        )
        self.repository.commit_turn(TurnCommit(updated, session.version, messages))
        return TurnResult(updated, outcome, messages)
