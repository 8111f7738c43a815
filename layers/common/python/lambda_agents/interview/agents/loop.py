"""BaseAgent.run_agent_loop (docs/interview.md#the-agent-loop) and the context of one turn.

The loop, per model call (one iteration):
1. the agent's system prompt is rebuilt from the current state (sections derive from state),
   then one tool-calling chat completion (``complete_with_retries``: transient failures retried
   within the deadline, and a truncated answer retried once with the budget its partial tool
   call asks for, up to ``AGENT_TOKEN_CEILING``: the engine's truncation rules);
2. every tool call is parsed with ``parse_and_validate_tool_args``, recorded as a RunStep before
   and after it runs, and its FunctionCallResult goes back to the model, errors included;
   an accepted ``ask`` ends the loop (the applicant must answer); calls after it in the same
   answer are not run. No agent's ``ask`` reaches the applicant unless that exact text passed a
   QuickCheck in this turn (the first of docs/interview.md#invariants, enforced here for every
   agent);
3. an answer without a tool call: the remaining tasks are injected ("You still need to: ...")
   and the model is called again; without remaining tasks the loop ends;
4. the agent's own end (``is_done``: the greeting's three settings, a plan, a finished
   interview) ends the loop without another call.

Decisions (docs/interview.md#open-points-decided):
- the budget of 10 iterations is per applicant turn, shared by the agents that run in it (a
  turn may hand over Greeter -> Architect -> Interviewer); sub-agent calls run inside tools and
  do not count. When it runs out the turn ends with a graceful reply, never an exception.
- the model's free text never reaches the applicant: only an accepted ``ask`` (or a message the
  system writes itself) does. A refusal or a content-filter stop ends the turn with a graceful
  reply. An answer still truncated after ``complete_with_retries`` (its need is above the
  ceiling or past the deadline) ends the turn like the iteration limit, with a graceful reply:
  its cut tool call is not run, and the model is not called again at a budget known too small.
- transport failures (``ProviderFailed``) are not the model's to handle: they propagate, and
  the API layer writes nothing of the turn.
- the deadline (``DeadlineReached``: the API request's 29 s, or the Lambda's time, running out)
  cuts the turn to what fits: once a tool has succeeded in this turn, the loop ends with a
  graceful reply like the iteration limit, the state as the last completed tool left it (a tool
  stopped half-way by the deadline is undone), and the turn is stored once; before that there
  is nothing worth keeping, and ``DeadlineReached`` propagates (nothing is written).
"""

from __future__ import annotations

import copy
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel

from ...llm import (
    CallOptions,
    CallResult,
    ChatModel,
    ChatRequest,
    DeadlineReached,
    GrowingTokenPolicy,
    RetryPolicy,
    Usage,
    complete_with_retries,
)
from ...llm.policy import TRANSIENT_KINDS
from ...llm.types import (
    AnswerHints,
    Message,
    RequestParameters,
    ToolCall,
    ToolChoice,
    assistant_tool_message,
    tool_result_message,
)
from ...observability import elapsed_ms
from ..interview_log import InterviewLog
from ..rules.models import AgentName, FieldStatus, InterviewState
from ..rules.run_steps import RunStep, RunStepRecorder, recorded_input
from ..rules.state_changes import InvariantViolation
from .reviewers import SubAgents
from .tool_calls import FunctionCallResult, InvalidToolArgs, parse_and_validate_tool_args
from .tool_inputs import ToolSpec
from .turn_context import ToolCallRecord, TurnContext

AGENT_MAX_TOKENS = 1024
# What one agent answer (a tool call and its arguments, a question) usually needs: the plan lowers
# the 1,024-token cap to what the turn's time left holds, rather than refusing the call, until the
# container has learned the real need.
AGENT_EXPECTED_TOKENS = 256
UNCHECKED_QUESTION = "refused: no QuickCheck passed for this exact message in this turn; it was not sent."
AGENT_TOKEN_CEILING = 4096
# Transient failures back off; a truncated answer is retried at once with the budget it needs.
AGENT_RETRIES = RetryPolicy(max_attempts=3, retry_on=TRANSIENT_KINDS | {"length"}, immediate=frozenset({"length"}))
LoopEnd = Literal["ask", "done", "loop_limit", "time_limit", "declined"]


@dataclass(frozen=True)
class ToolOutcome:
    result: FunctionCallResult
    reply: str | None = None  # an accepted ask: the text the applicant receives; ends the loop


@dataclass(frozen=True)
class AgentLoopResult:
    """What an agent loop returns: the reply, the tool calls, the state, the usage, and why the loop ended."""

    response_text: str
    tool_calls: list[ToolCallRecord]
    awaiting_user_response: bool
    state: InterviewState
    usage: Usage
    ended: LoopEnd


@dataclass
class AgentEnv:
    """The ports an agent loop uses; passed in, so unit tests need no patching."""

    model: ChatModel
    run_steps: RunStepRecorder
    log: InterviewLog
    subagents: SubAgents
    sleep: Callable[[float], None] = time.sleep
    now: Callable[[], datetime] = lambda: datetime.now(UTC)

    def with_model(self, model: ChatModel) -> AgentEnv:
        """The same ports with every model call (the agents' and the sub-agents') made to ``model``."""
        subagents = copy.copy(self.subagents)  # a copy keeps what is set on the instance (a test's stand-in)
        subagents.model = model
        return replace(self, model=model, subagents=subagents)


class BaseAgent(ABC):
    name: ClassVar[AgentName]
    tools: ClassVar[tuple[ToolSpec[Any], ...]]
    result_type: ClassVar[type[FunctionCallResult]] = FunctionCallResult
    max_tokens: ClassVar[int] = AGENT_MAX_TOKENS
    temperature: ClassVar[float | None] = 0.3
    step: ClassVar[str] = "thinking"  # the ``progress`` frames' step of its model calls (docs/api.md#websocket)

    @property
    def purpose(self) -> str:
        return self.name.purpose

    @abstractmethod
    def system_prompt(self, ctx: TurnContext) -> str: ...

    @abstractmethod
    def get_remaining_tasks(self, ctx: TurnContext) -> list[str]: ...

    @abstractmethod
    def is_done(self, state: InterviewState) -> bool: ...

    @abstractmethod
    def execute_tool(self, name: str, arguments: BaseModel, ctx: TurnContext, env: AgentEnv) -> ToolOutcome: ...

    def conversation(self, ctx: TurnContext) -> list[Message]:
        """The prompt history this agent sees; by default the turn's role/content history."""
        return list(ctx.history)

    def tool_choice(self, ctx: TurnContext) -> ToolChoice:
        return "auto"

    def success(self, message: str, **data: Any) -> FunctionCallResult:
        return self.result_type.success(message, **data)

    def error(self, message: str, **data: Any) -> FunctionCallResult:
        return self.result_type.error(message, **data)

    # -- the loop ------------------------------------------------------------------------------

    def call_options(self, sleep: Callable[[float], None]) -> CallOptions:
        """How each of the loop's calls is made: transient failures and truncation retried, the
        budget grown up to ``AGENT_TOKEN_CEILING``, lowered to what fits the time left when needed."""
        ceiling = max(self.max_tokens, AGENT_TOKEN_CEILING)
        policy = GrowingTokenPolicy(initial=self.max_tokens, ceiling=ceiling)
        return CallOptions(AGENT_RETRIES, policy, AGENT_EXPECTED_TOKENS, sleep)

    def run_agent_loop(self, ctx: TurnContext, env: AgentEnv) -> AgentLoopResult:
        log_context = {"agent": self.name.value, "sessionId": ctx.session_id}
        loop_messages: list[Message] = []
        calls_before = len(ctx.tool_calls)
        while True:
            if self.is_done(ctx.state):
                return self._result_of(ctx, calls_before, "", "done")
            if ctx.iterations_left <= 0:
                env.log.warn("iteration limit reached", **log_context, iterations=ctx.iterations)
                return self._result_of(ctx, calls_before, "", "loop_limit")
            ctx.iterations += 1
            env.log.debug("loop iteration", **log_context, iteration=ctx.iterations)
            call = self._call(ctx, env, self._request(ctx, loop_messages))
            if call is None:
                env.log.warn("deadline reached", **log_context, iterations=ctx.iterations)
                return self._result_of(ctx, calls_before, "", "time_limit")
            response = call.response
            env.log.info(
                "llm call",
                **log_context,
                iteration=ctx.iterations,
                finishReason=response.finish_reason,
                toolCalls=len(response.tool_calls),
                totalTokens=call.usage.total_tokens,
            )
            if response.refusal or response.finish_reason == "content_filter":
                env.log.warn("model declined", **log_context, finishReason=response.finish_reason)
                return self._result_of(ctx, calls_before, "", "declined")
            if response.finish_reason == "length":
                env.log.warn("answer truncated beyond the token ceiling", **log_context, attempts=len(call.attempts))
                return self._result_of(ctx, calls_before, "", "loop_limit")
            if response.tool_calls:
                loop_messages.append(assistant_tool_message(response.content, response.tool_calls))
                ended = self._run_tools(response.tool_calls, ctx, env, loop_messages)
                if ended is not None:
                    return self._result_of(ctx, calls_before, *ended)
                continue
            if response.content:
                loop_messages.append({"role": "assistant", "content": response.content})
            tasks = self.get_remaining_tasks(ctx)
            if not tasks:
                return self._result_of(ctx, calls_before, "", "done")
            env.log.info("remaining tasks injected", **log_context, tasks=len(tasks))
            loop_messages.append({"role": "system", "content": remaining_tasks_message(tasks)})

    def _request(self, ctx: TurnContext, loop_messages: list[Message]) -> ChatRequest:
        return ChatRequest(
            messages=[{"role": "system", "content": self.system_prompt(ctx)}, *self.conversation(ctx), *loop_messages],
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            parameters=RequestParameters(
                tools=tuple(spec.definition() for spec in self.tools),
                tool_choice=self.tool_choice(ctx),
                parallel_tool_calls=False,  # strict tool schemas; the invariants are checked call by call
            ),
            purpose=self.purpose,
            hints=AnswerHints(language=ctx.state.language),
        )

    def _call(self, ctx: TurnContext, env: AgentEnv, request: ChatRequest) -> CallResult | None:
        """The model's answer, its usage and attempts counted to the turn whatever happens; None when
        the deadline came after the turn made progress (what it did is kept, the applicant is asked)."""
        try:
            with ctx.step(self.name.value, self.step):
                call = complete_with_retries(env.model, request, self.call_options(env.sleep), deadline=ctx.deadline)
        except Exception as error:
            usage = getattr(error, "usage", None)
            if isinstance(usage, Usage):
                ctx.usage = ctx.usage + usage
            attempts = getattr(error, "attempts", None)
            if isinstance(attempts, list):
                kind = str(getattr(error, "kind", type(error).__name__))
                ctx.bill(attempts, purpose=self.purpose, outcome=kind, model=env.model.model_name)
            if isinstance(error, DeadlineReached) and ctx.made_progress:
                return None
            raise
        ctx.usage = ctx.usage + call.usage
        ctx.bill(call.attempts, purpose=self.purpose, outcome="answered", model=env.model.model_name)
        return call

    def _run_tools(
        self, tool_calls: Sequence[ToolCall], ctx: TurnContext, env: AgentEnv, loop_messages: list[Message]
    ) -> tuple[str, LoopEnd] | None:
        """The answer's tool calls, one by one, their results added to the loop's messages; the
        loop's end when one asks the applicant, or the deadline cuts one after the turn made progress."""
        for tool_call in tool_calls:
            before = ctx.checkpoint()
            try:
                outcome = self._execute(tool_call, ctx, env)
            except DeadlineReached as error:
                ctx.usage = ctx.usage + error.usage
                ctx.bill(error.attempts, purpose=f"{self.purpose}.subtask", outcome=error.kind)
                ctx.restore(before)
                if not ctx.made_progress:
                    raise
                env.log.warn(
                    "deadline reached",
                    agent=self.name.value,
                    sessionId=ctx.session_id,
                    iterations=ctx.iterations,
                    tool=tool_call.name[:64],
                )
                return "", "time_limit"
            loop_messages.append(tool_result_message(tool_call.id, outcome.result.for_model()))
            if outcome.reply is not None:
                return outcome.reply, "ask"
        return None

    def _execute(self, tool_call: ToolCall, ctx: TurnContext, env: AgentEnv) -> ToolOutcome:
        spec = next((spec for spec in self.tools if spec.name == tool_call.name), None)
        parsed = (
            parse_and_validate_tool_args(tool_call.arguments, spec.input_model, spec.name)
            if spec is not None
            else InvalidToolArgs(
                f"Unknown tool {tool_call.name!r}; the tools are: {', '.join(s.name for s in self.tools)}"
            )
        )
        arguments = None if isinstance(parsed, InvalidToolArgs) else parsed.data
        step = RunStep(
            session_id=ctx.session_id,
            turn_id=ctx.turn_id,
            seq=ctx.next_step_seq(),
            agent=self.name.value,
            tool_name=tool_call.name[:64],
            input=recorded_input(tool_call.arguments, None if arguments is None else arguments.model_dump(mode="json")),
            started_at=env.now().isoformat(),
        )
        env.run_steps.started(step)
        started = time.perf_counter()
        try:
            if isinstance(parsed, InvalidToolArgs):
                outcome = ToolOutcome(self.error(parsed.error))
            else:
                outcome = self.execute_tool(tool_call.name, parsed.data, ctx, env)
            if outcome.reply is not None and not ctx.passed_quick_check(outcome.reply):
                # A QuickCheck before every question, whichever agent asks (docs/interview.md#invariants).
                # Enforced here, where every reply to the applicant passes, not in each agent's prompt.
                outcome = ToolOutcome(self.error(UNCHECKED_QUESTION))
        except InvariantViolation as violation:
            # The reducer is the last word on the invariants: whatever a tool tried, the refusal goes
            # back to the model as the tool's result, and nothing of it was applied.
            outcome = ToolOutcome(self.error(f"refused: {violation}"))
        except Exception as error:
            step.output = {"status": "error", "result": {"message": f"aborted: {type(error).__name__}"}}
            step.duration_ms = elapsed_ms(started)
            env.run_steps.finished(step)
            raise
        step.output = outcome.result.model_dump(mode="json", by_alias=True)
        step.duration_ms = elapsed_ms(started)
        env.run_steps.finished(step)
        ctx.tool_calls.append(ToolCallRecord(self.name.value, tool_call.name, outcome.result.status))
        env.log.info(
            "tool executed",
            agent=self.name.value,
            sessionId=ctx.session_id,
            tool=tool_call.name[:64],
            status=outcome.result.status,
            durationMs=step.duration_ms,
        )
        if outcome.result.status == "error":
            env.log.debug(
                "tool error", agent=self.name.value, tool=tool_call.name[:64], error=outcome.result.result.message
            )
        return outcome

    def _result_of(self, ctx: TurnContext, calls_before: int, text: str, ended: LoopEnd) -> AgentLoopResult:
        return AgentLoopResult(
            response_text=text,
            tool_calls=ctx.tool_calls[calls_before:],
            awaiting_user_response=ended != "done",
            state=ctx.state,
            usage=ctx.usage,
            ended=ended,
        )


def remaining_tasks_message(tasks: list[str]) -> str:
    return "You still need to:\n" + "\n".join(f"- {task}" for task in tasks)


def current_field_status(state: InterviewState) -> FieldStatus | None:
    if state.current_field_id is None:
        return None
    return state.fields[state.current_field_id].status
