"""The Orchestrator (docs/interview.md#a-turn): one applicant message in, the reply and the turn's
``StateChange`` list out. It persists nothing: the API layer does.

Per turn: ADD_USER_MESSAGE; then the current agent's loop; when an agent is done, the next one takes
over within the same turn (greeter -> architect -> interviewer; the interviewer's end is the end of
the workflow); before the Interviewer runs, the system injects the current field. The turn ends at
an accepted ``ask``, at the end of the interview (a reply the system writes), or with a graceful
reply (iteration budget or the request's time spent, the model declined); ADD_ASSISTANT_MESSAGE
carries the turn's additionalData (docs/engine.md#additional-data: what the tools produced that a
client shows) and the turn's usage, summed over every model call, sub-agents and failed attempts
included.

An applicant answer needs review when the Interviewer's question for the current field is open
(``asked_field_id``) as the turn starts.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from typing import Literal

from ...llm import Deadline, Usage
from ...llm.accounting import ModelAccount, prompt_version
from ...llm.errors import DeadlineReached
from ...llm.types import Message, estimate_tokens
from ..errors import InterviewFinished
from ..locales.languages import reply_language, system_text
from ..paid_calls import TurnCallBook
from ..rules.current_field import advance_field
from ..rules.models import AgentName, ChatMessage, InterviewState, JobDefinition, SessionStatus
from ..rules.state_changes import AddAssistantMessage, AddUserMessage, SetCurrentAgent, StateChange
from .architect import ArchitectAgent
from .greeter import GreeterAgent
from .interviewer import InterviewerAgent
from .loop import AgentEnv, BaseAgent
from .reviewers import AUDITOR_PROMPT, QUICK_CHECK_PROMPT, REVIEWER_PROMPT, AuditResult, QuickCheckResult, ReviewResult
from .turn_context import DEFAULT_MAX_ITERATIONS, ToolCallRecord, TurnContext, TurnLive, UnwatchedTurn

HISTORY_BUDGET_TOKENS = 4000
HISTORY_MAX_MESSAGES = 40
ReplyKind = Literal["question", "completed", "audit_failed", "retry", "declined"]


@dataclass(frozen=True)
class OrchestratorInput:
    """What the API layer hands the Orchestrator: session, state, chat history, the job and the new message."""

    session_id: str
    job: JobDefinition
    state: InterviewState
    chat_history: Sequence[ChatMessage]
    user_message: str
    turn_id: str
    deadline: Deadline | None = None
    # The turn runs again under the same id (the worker's run of a turn its request handed over):
    # the RunSteps recorded before stay, and this run's steps are numbered after them.
    resumed: bool = False
    user_id: str | None = None  # the applicant's, for the accounting log lines (never their text)
    # The applicant's open connections (``live.LiveAnswer``): the hidden steps as they run, the question's words.
    live: TurnLive = field(default_factory=UnwatchedTurn)
    # The turn's model calls (``paid_calls``): those its request paid for are taken from there,
    # the others made and kept; None: every call goes to the model.
    calls: TurnCallBook | None = None


@dataclass(frozen=True)
class TurnOutcome:
    reply: str
    reply_kind: ReplyKind
    awaiting_user_response: bool
    agent: AgentName | None
    state: InterviewState
    changes: list[StateChange]
    usage: Usage
    iterations: int
    # The conversation agents' calls that went to the model: ``iterations`` less the answers taken
    # from the calls the turn's request paid for (``paid_calls``), which this run did not make.
    model_calls: int = 0
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    cut_by_time: bool = False  # the deadline ended the turn early (a graceful "time_limit" reply)
    # Every model call of the turn (llm.accounting); None when no call was made.
    account: ModelAccount | None = None


def get_next_agent(current: AgentName, state: InterviewState) -> AgentName | None:
    """The agent that takes over: greeter -> architect -> interviewer; the interviewer ends the workflow."""
    if current is AgentName.GREETER:
        return AgentName.ARCHITECT
    if current is AgentName.ARCHITECT:
        return AgentName.INTERVIEWER
    return None


def prompt_history(
    chat_history: Sequence[ChatMessage],
    user_message: str,
    budget_tokens: int = HISTORY_BUDGET_TOKENS,
    max_messages: int = HISTORY_MAX_MESSAGES,
) -> list[Message]:
    """The most recent role/content messages within the budget, the new message always last.

    Only what was said: tool calls and results of earlier turns never enter the history.
    """
    kept: list[Message] = []
    used = estimate_tokens(user_message)
    for message in reversed(chat_history):
        cost = estimate_tokens(message.content)
        if len(kept) >= max_messages or used + cost > budget_tokens:
            break
        kept.append({"role": message.role, "content": message.content})
        used += cost
    kept.reverse()
    return [*kept, {"role": "user", "content": user_message}]


class Orchestrator:
    def __init__(
        self,
        env: AgentEnv,
        agents: Mapping[AgentName, BaseAgent] | None = None,
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
    ) -> None:
        self.env = env
        self.agents: Mapping[AgentName, BaseAgent] = agents or {
            AgentName.GREETER: GreeterAgent(),
            AgentName.ARCHITECT: ArchitectAgent(),
            AgentName.INTERVIEWER: InterviewerAgent(),
        }
        self.max_iterations = max_iterations
        self.prompt_version = interview_prompt_version(self.agents.values())

    def process_message(self, given: OrchestratorInput) -> TurnOutcome:
        state = given.state
        if state.finished or state.current_agent is None:
            raise InterviewFinished(f"the interview is {state.status.value}")
        ctx = TurnContext(
            session_id=given.session_id,
            turn_id=given.turn_id,
            job=given.job,
            state=state,
            history=prompt_history(given.chat_history, given.user_message),
            transcript=[*((m.role, m.content) for m in given.chat_history), ("user", given.user_message)],
            deadline=given.deadline,
            max_iterations=self.max_iterations,
            user_id=given.user_id,
            live=given.live,
            prompt_version=self.prompt_version,
            step_seq=self.env.run_steps.last_seq(given.session_id, given.turn_id) if given.resumed else 0,
            answer_needs_review=(
                state.current_agent is AgentName.INTERVIEWER
                and state.asked_field_id is not None
                and state.asked_field_id == state.current_field_id
            ),
        )
        ctx.apply(AddUserMessage(given.user_message))
        self.env.log.info(
            "workflow started", sessionId=ctx.session_id, agent=state.current_agent.value, turnId=ctx.turn_id
        )
        env = self.env if given.calls is None else self.env.with_model(given.calls.around(self.env.model))
        try:
            outcome = self._run(ctx, given, env)
        except DeadlineReached as error:
            error.account = ctx.account  # every call of the turn so far, for the worker's usageTotal
            raise
        if given.calls is None:
            return outcome
        replayed = given.calls.replayed_of(agent.purpose for agent in self.agents.values())
        return replace(outcome, model_calls=outcome.iterations - replayed)

    def _run(self, ctx: TurnContext, given: OrchestratorInput, env: AgentEnv) -> TurnOutcome:
        log = env.log
        for _ in range(len(AgentName) + 1):
            agent_name = ctx.state.current_agent
            if agent_name is None:
                break
            agent = self.agents[agent_name]
            if agent_name is AgentName.INTERVIEWER:
                ctx.apply(*advance_field(ctx.state))
            result = agent.run_agent_loop(ctx, env)
            if result.ended == "ask":
                # Checked (QuickCheck passed its exact text): its words may reach the applicant now.
                ctx.live.write(result.response_text)
                return self._finish(ctx, agent_name, result.response_text, "question")
            if result.ended == "loop_limit" or (result.ended == "done" and not agent.is_done(ctx.state)):
                return self._finish(ctx, agent_name, self._system_text("loop_limit", ctx, given), "retry")
            if result.ended == "time_limit":
                finished = self._finish(ctx, agent_name, self._system_text("time_limit", ctx, given), "retry")
                return replace(finished, cut_by_time=True)
            if result.ended == "declined":
                return self._finish(ctx, agent_name, self._system_text("declined", ctx, given), "declined")
            following = get_next_agent(agent_name, ctx.state)
            if following is not None and ctx.state.current_agent is not following:
                ctx.apply(SetCurrentAgent(following))
                log.info(
                    "agent transition", sessionId=ctx.session_id, agent=agent_name.value, nextAgent=following.value
                )
        if ctx.state.status is SessionStatus.COMPLETED:
            return self._finish(ctx, None, self._system_text("completed", ctx, given), "completed")
        if ctx.state.status is SessionStatus.AUDIT_FAILED:
            return self._finish(ctx, None, self._system_text("audit_failed", ctx, given), "audit_failed")
        raise AssertionError("unreachable: every agent's loop ends in ask, a graceful reply or the interview's end")

    def _system_text(self, kind: str, ctx: TurnContext, given: OrchestratorInput) -> str:
        return system_text(kind, reply_language(ctx.state.language, given.user_message))

    def _finish(self, ctx: TurnContext, agent: AgentName | None, reply: str, kind: ReplyKind) -> TurnOutcome:
        data = {
            **ctx.baked,
            "replyKind": kind,
            "turnId": ctx.turn_id,
            "usage": ctx.usage.as_dict(),
            # The employer's: what the turn's calls cost (not in views.APPLICANT_DATA_KEYS).
            **({"account": ctx.account.as_dict()} if ctx.account is not None else {}),
        }
        ctx.apply(AddAssistantMessage(reply, agent.value if agent else None, data))
        awaiting = kind not in ("completed", "audit_failed")
        self.env.log.info(
            "message processed",
            sessionId=ctx.session_id,
            agent=agent.value if agent else None,
            replyKind=kind,
            iterations=ctx.iterations,
            changes=len(ctx.changes),
            totalTokens=ctx.usage.total_tokens,
        )
        return TurnOutcome(
            reply=reply,
            reply_kind=kind,
            awaiting_user_response=awaiting,
            agent=agent,
            state=ctx.state,
            changes=list(ctx.changes),
            usage=ctx.usage,
            iterations=ctx.iterations,
            model_calls=ctx.iterations,
            tool_calls=list(ctx.tool_calls),
            account=ctx.account,
        )


def interview_prompt_version(agents: Iterable[BaseAgent]) -> str:
    """The version of the interview's prompts (``llm.accounting.prompt_version``), one for every
    call of a turn: each agent's instructions (its ``system_prompt`` and ``get_remaining_tasks``
    as written, the code that fills the state in included, never a turn's text) and tool
    schemas, and the sub-sessions' prompts and answer schemas. Any change to them is a new version."""
    return _version_of(tuple(sorted({type(agent) for agent in agents}, key=lambda kind: kind.name.value)))


@cache
def _version_of(kinds: tuple[type[BaseAgent], ...]) -> str:
    parts: list[object] = []
    for kind in kinds:
        parts.append(
            [
                kind.name.value,
                _source(kind.system_prompt),
                _source(kind.get_remaining_tasks),
                [asdict(spec.definition()) for spec in kind.tools],
            ]
        )
    for prompt, answer in (
        (QUICK_CHECK_PROMPT, QuickCheckResult),
        (REVIEWER_PROMPT, ReviewResult),
        (AUDITOR_PROMPT, AuditResult),
    ):
        parts.append([prompt, answer.model_json_schema()])
    return prompt_version(*parts)


def _source(function: Callable[..., object]) -> str:
    """A method's source: the instructions an agent writes are code that fills the state in."""
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):  # pragma: no cover - a layer shipped without its sources
        return function.__qualname__
