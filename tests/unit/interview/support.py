"""Test support for the interview: a model scripted per purpose, an in-memory repository, a job.

``PurposeScript`` answers each request from the queue of its ``purpose`` (``interview.greeter``,
``interview.quick_check``, ...): an unexpected purpose, an empty queue or a step left over fails
the test, like the engine's ScriptedModel. Steps are ChatResponses or ProviderErrors.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import count
from typing import Any

from lambda_agents.answered_later import Handover
from lambda_agents.interview.agents.loop import AgentEnv
from lambda_agents.interview.agents.orchestrator import Orchestrator
from lambda_agents.interview.agents.reviewers import SubAgents
from lambda_agents.interview.catalog.notice import notice_for
from lambda_agents.interview.errors import VersionConflict
from lambda_agents.interview.interview_log import RecordingLog
from lambda_agents.interview.pending_turns import TurnMessage, turn_times
from lambda_agents.interview.repository import StoredInterview, TurnCommit, Withdrawal
from lambda_agents.interview.rules.application_events import ApplicationEvent
from lambda_agents.interview.rules.models import InterviewSession, InterviewState, JobDefinition
from lambda_agents.interview.rules.run_steps import InMemoryRunSteps
from lambda_agents.interview.rules.state_changes import RecordConsent, apply_change
from lambda_agents.interview.service import InterviewService
from lambda_agents.interview.turn_runner import TurnResult
from lambda_agents.interview.views import turn_answer
from lambda_agents.llm import ChatModel, ChatRequest, ChatResponse, Deadline, ToolCall, Usage
from lambda_agents.llm.errors import ProviderError
from lambda_agents.llm.speeds import SpeedEstimate

Step = ChatResponse | ProviderError

JOB = JobDefinition.model_validate(
    {
        "job_id": "job-barista",
        "fields": [
            {
                "field_id": "experience",
                "label": "経験",
                "intent": "How long and where the applicant worked as a barista",
                "required": True,
                "required_facts": ["years", "workplace"],
                "done_criteria": "Both the number of years and a workplace are known",
            },
            {
                "field_id": "motivation",
                "label": "志望動機",
                "intent": "Why the applicant wants this job",
                "required": True,
                "required_facts": ["reason"],
                "done_criteria": "A concrete reason is given",
            },
            {
                "field_id": "hobby",
                "label": "趣味",
                "intent": "Small talk about hobbies",
                "required": False,
                "required_facts": [],
                "done_criteria": "Any answer, or a polite decline",
            },
        ],
    }
)


def call(name: str, arguments: dict[str, Any] | str, call_id: str = "call_1") -> ToolCall:
    return ToolCall(
        call_id, name, arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    )


def tools(*calls: ToolCall, finish: str = "tool_calls", prompt: int = 100, completion: int = 20) -> ChatResponse:
    return ChatResponse(None, finish, tool_calls=tuple(calls), usage=Usage(prompt, completion), model="scripted")


def tool(name: str, arguments: dict[str, Any] | str, **kwargs: Any) -> ChatResponse:
    return tools(call(name, arguments), **kwargs)


def text(content: str, *, finish: str = "stop", refusal: str | None = None) -> ChatResponse:
    return ChatResponse(content, finish, refusal=refusal, usage=Usage(50, 10), model="scripted")


def structured(payload: dict[str, Any], *, prompt: int = 80, completion: int = 15) -> ChatResponse:
    return ChatResponse(
        json.dumps(payload, ensure_ascii=False), "stop", usage=Usage(prompt, completion), model="scripted"
    )


def ask(message: str) -> ChatResponse:
    return tool("ask", {"message": message})


def reviewer(**facts: str) -> ChatResponse:
    return tool("subtask", {"agent": "reviewer", "facts": [{"name": k, "value": v} for k, v in facts.items()]})


def auditor() -> ChatResponse:
    return tool("subtask", {"agent": "auditor", "facts": None})


PASS_CHECK = {"passed": True, "violations": None}
FAIL_CHECK = {"passed": False, "violations": [{"type": "prohibited_topic", "message": "asks about age"}]}
PASS_REVIEW = {"passed": True, "feedback": None, "missing_facts": None}
PASS_AUDIT = {"passed": True, "violations": None, "summary": "5 years at Cafe Mori; loves coffee."}


def checked_ask(question: str) -> dict[str, list[Step]]:
    """The steps of an Interviewer turn that asks ``question``, which its ``ask``'s QuickCheck
    passes: ``PurposeScript(**checked_ask(Q))``, or ``model.add(**checked_ask(Q))`` for one more turn."""
    return {"interviewer": [ask(question)], "quick_check": [structured(PASS_CHECK)]}


def reviewed_then_asked(question: str, **facts: str) -> dict[str, list[Step]]:
    """An Interviewer turn on an answer: the Reviewer passes ``facts``, then ``question`` is asked
    and passes its QuickCheck: ``PurposeScript(**reviewed_then_asked(Q, years="5年"))``."""
    return {
        "interviewer": [reviewer(**facts), ask(question)],
        "reviewer": [structured(PASS_REVIEW)],
        "quick_check": [structured(PASS_CHECK)],
    }


def reviewed_then_audited(**facts: str) -> dict[str, list[Step]]:
    """The last field's answer: the Reviewer passes ``facts``, then the Auditor passes the interview."""
    return {
        "interviewer": [reviewer(**facts), auditor()],
        "reviewer": [structured(PASS_REVIEW)],
        "auditor": [structured(PASS_AUDIT)],
    }


class PurposeScript:
    """A ChatModel whose answers are scripted per request purpose."""

    def __init__(self, **queues: Iterable[Step]) -> None:
        self.queues: dict[str, list[Step]] = {}
        self.add(**queues)
        self.requests: list[ChatRequest] = []
        self.hook: Any = None

    def add(self, **queues: Iterable[Step]) -> PurposeScript:
        for short, steps in queues.items():
            self.queues.setdefault(f"interview.{short}", []).extend(steps)
        return self

    @property
    def model_name(self) -> str:
        return "scripted"

    def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        if self.hook is not None:
            self.hook(request)
        queue = self.queues.get(request.purpose)
        if not queue:
            raise AssertionError(f"unexpected {request.purpose} call #{len(self.requests)}: nothing scripted")
        step = queue.pop(0)
        if isinstance(step, ProviderError):
            raise step
        return step

    def of(self, purpose: str) -> list[ChatRequest]:
        return [r for r in self.requests if r.purpose == f"interview.{purpose}"]

    def assert_consumed(self) -> None:
        left = {purpose: len(steps) for purpose, steps in self.queues.items() if steps}
        assert not left, f"scripted steps never requested: {left}"


class ConsentedOnCreate(InterviewService):
    """The service with sessions created consented (version 0, the notice accepted), so tests of
    the agents start where the agents start. Consent itself is tested on the plain service."""

    def create(self, user_id: str, job: JobDefinition) -> InterviewSession:
        created = super().create(user_id, job)
        accepted = RecordConsent(notice_for(job, self.retention).notice_id, created.created_at)
        session = created.model_copy(update={"state": apply_change(created.state, accepted, job)})
        self.repository.stored[session.session_id] = StoredInterview(session.model_copy(deep=True), [])
        return session


@dataclass
class InMemoryRepository:
    """The repository port in memory, with the same optimistic locking as DynamoDB; ``outbox``
    holds the events committed with the turns, ``retry_records`` the turns' idempotency records."""

    stored: dict[str, StoredInterview] = field(default_factory=dict)
    commits: int = 0
    outbox: list[ApplicationEvent] = field(default_factory=list)
    retry_records: dict[str, str] = field(default_factory=dict)  # record id -> session id
    pending: dict[str, Any] = field(default_factory=dict)  # session id -> its PendingTurn
    turns: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (session, turn) -> outcome

    def create(self, session: Any) -> None:
        assert session.session_id not in self.stored
        self.stored[session.session_id] = StoredInterview(session.model_copy(deep=True), [])

    def load(self, session_id: str) -> StoredInterview | None:
        found = self.stored.get(session_id)
        if found is None:
            return None
        return StoredInterview(found.session.model_copy(deep=True), list(found.messages), self.pending.get(session_id))

    def mark_pending(self, session_id: str, user_id: str, expected_version: int, pending: Any) -> None:
        current = self.stored.get(session_id)
        if current is None or current.session.version != expected_version or session_id in self.pending:
            raise VersionConflict("changed, withdrawn, or another turn is pending")
        self.pending[session_id] = pending
        if pending.idempotency_record is not None:  # kept with the mark, so a withdrawal finds it
            self.retry_records[pending.idempotency_record] = session_id

    def release_pending(self, session_id: str, turn_id: str, failure: dict[str, Any] | None) -> None:
        mark = self.pending.get(session_id)
        if mark is None or mark.turn_id != turn_id:
            return
        del self.pending[session_id]
        if failure is not None:
            self.turns[(session_id, turn_id)] = failure

    def turn_record(self, session_id: str, turn_id: str) -> dict[str, Any] | None:
        return self.turns.get((session_id, turn_id))

    def commit_turn(self, commit: TurnCommit) -> None:
        current = self.stored.get(commit.session.session_id)
        if current is None:
            raise VersionConflict("withdrawn")
        if current.session.version != commit.expected_version:
            raise VersionConflict(f"version {commit.expected_version} is stale")
        mark = self.pending.get(commit.session.session_id)
        if (mark.turn_id if mark else None) != commit.pending_turn_id:
            raise VersionConflict("the session's pending turn is another one")
        self.pending.pop(commit.session.session_id, None)
        if commit.answer is not None and commit.turn_id is not None:
            self.turns[(commit.session.session_id, commit.turn_id)] = {"status": "answered", "answer": commit.answer}
        self.commits += 1
        self.stored[commit.session.session_id] = StoredInterview(
            commit.session.model_copy(deep=True), [*current.messages, *commit.messages]
        )
        self.outbox.extend(commit.events)
        if commit.idempotency_record is not None:
            self.retry_records[commit.idempotency_record] = commit.session.session_id

    def withdraw(self, session_id: str, user_id: str, event: ApplicationEvent | None) -> Withdrawal:
        found = self.stored.get(session_id)
        if found is None or found.session.user_id != user_id:
            return Withdrawal(found=False)
        self.outbox = [e for e in self.outbox if e.application_id != session_id]
        if event is not None:
            self.outbox.append(event)
        self.retry_records = {r: s for r, s in self.retry_records.items() if s != session_id}
        self.pending.pop(session_id, None)
        self.turns = {key: outcome for key, outcome in self.turns.items() if key[0] != session_id}
        del self.stored[session_id]
        return Withdrawal(found=True, to_announce=() if event is None else (event,))


@dataclass
class Harness:
    model: ChatModel
    repository: InMemoryRepository
    run_steps: InMemoryRunSteps
    log: RecordingLog
    service: InterviewService
    orchestrator: Orchestrator

    def stored(self, session_id: str) -> StoredInterview:
        """The session as stored; a test that asks for it expects it there."""
        found = self.repository.load(session_id)
        assert found is not None, f"no stored session {session_id}"
        return found


def harness(model: ChatModel, *, max_iterations: int = 10, job: JobDefinition = JOB) -> Harness:
    repository = InMemoryRepository()
    run_steps = InMemoryRunSteps()
    log = RecordingLog()
    env = AgentEnv(
        model=model,
        run_steps=run_steps,
        log=log,
        subagents=SubAgents(model, sleep=lambda _: None),
        sleep=lambda _: None,
    )
    orchestrator = Orchestrator(env, max_iterations=max_iterations)
    service = ConsentedOnCreate(repository, orchestrator)
    return Harness(model, repository, run_steps, log, service, orchestrator)


def handed_over_by(h: Harness, queue: Any, pace: SpeedEstimate) -> None:
    """The service hands turns to a worker through ``queue``, expecting them to take a typical
    turn's calls at ``pace`` until it has timed its own."""
    h.service.handover = Handover(queue, lambda: pace, turn_times())
    h.service.render_answer = turn_answer


def run_pending(h: Harness, user_id: str, session_id: str, turn_id: str, deadline: Deadline) -> TurnResult | None:
    """The worker's run of a handed-over turn, as its queue message names it."""
    return h.service.run_pending(TurnMessage(session_id=session_id, user_id=user_id, turn_id=turn_id), deadline)


def interviewing(h: Harness, *, asked: bool = False, done: tuple[str, ...] = (), user_id: str = "applicant-1") -> str:
    """A stored session past the greeting and the plan, the Interviewer on its first unfinished
    field; ``asked``: its question is open (the next message is an answer to review)."""
    from lambda_agents.interview.rules.current_field import advance_field
    from lambda_agents.interview.rules.models import AgentName, FieldStatus
    from lambda_agents.interview.rules.state_changes import (
        RecordReview,
        SetAskedField,
        SetCountry,
        SetCurrentAgent,
        SetFieldStatus,
        SetLanguage,
        SetPlan,
        SetTimezone,
        apply_changes,
    )

    session = h.service.create(user_id, JOB)
    state = apply_changes(
        session.state,
        [
            SetLanguage("ja"),
            SetCountry("JP"),
            SetTimezone("Asia/Tokyo", "country"),
            SetCurrentAgent(AgentName.ARCHITECT),
            SetPlan(tuple(JOB.field_ids)),
            SetCurrentAgent(AgentName.INTERVIEWER),
        ],
        JOB,
    )
    for field_id in done:
        state = apply_changes(state, advance_field(state), JOB)
        state = apply_changes(
            state, [SetFieldStatus(field_id, FieldStatus.REVIEWING), RecordReview(field_id, True, "", ())], JOB
        )
    state = apply_changes(state, advance_field(state), JOB)
    if asked:
        state = apply_changes(state, [SetAskedField(state.current_field_id)], JOB)
    from lambda_agents.interview.rules.models import ChatMessage

    messages = []
    if asked:
        question = f"「{JOB.field(state.current_field_id or '').label}」について教えてください。"
        messages.append(ChatMessage(seq=0, role="assistant", content=question, agent="interviewer", created_at="t"))
    stored = h.repository.stored[session.session_id]
    updated = stored.session.model_copy(update={"state": state, "message_count": len(messages)})
    h.repository.stored[session.session_id] = StoredInterview(updated, messages)
    return session.session_id


def clock_ticking_by_the_minute() -> Callable[[], datetime]:
    """A clock one minute later at every reading (from 2026-04-01 09:01 UTC), so that what is
    created one after the other is ordered by its time, as the listings order it."""
    readings = (datetime(2026, 4, 1, 9, 0, tzinfo=UTC) + timedelta(minutes=n) for n in count(1))
    return lambda: next(readings)


def consented_state(job: JobDefinition = JOB) -> InterviewState:
    """A new interview's state once the applicant accepted the notice (nothing applies before)."""
    return apply_change(InterviewState.initial(job), RecordConsent("notice-1", "2025-01-01T00:00:00+00:00"), job)
