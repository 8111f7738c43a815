"""A sub-session run for an agent (docs/interview.md#sub-sessions): shown to the applicant's open
connections as a hidden step while it runs, its tokens counted to the turn whatever its end; and
the QuickCheck every ``ask`` runs in code on its exact message before it counts as asked
(docs/interview.md#invariants), so the model writes a question once and can neither skip the
check nor ask something other than what was checked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel

from ...llm import StructuredOutputError, StructuredResult
from ...llm.errors import DeadlineReached, ProviderFailed
from ..rules.models import SubAgentName
from .loop import AgentEnv
from .reviewers import QuickCheckResult
from .turn_context import TurnContext, normalise_question

OutputT = TypeVar("OutputT", bound=BaseModel)
# The ``step`` of each sub-session's ``progress`` frames (docs/api.md#websocket).
SUB_SESSION_STEPS = {
    SubAgentName.QUICK_CHECK: "checking_question",
    SubAgentName.REVIEWER: "reviewing_answer",
    SubAgentName.AUDITOR: "auditing",
}


def counted(
    ctx: TurnContext, agent: SubAgentName, sub_session: Callable[[], StructuredResult[OutputT]]
) -> StructuredResult[OutputT] | StructuredOutputError:
    """A sub-session's result, or the error of an answer it could not use, its tokens counted
    either way. A failing provider and the deadline are raised: they end the turn, not the call."""
    try:
        with ctx.step(agent.value, SUB_SESSION_STEPS[agent]):
            run = sub_session()
    except DeadlineReached:
        raise  # counted where the turn ends on it (``BaseAgent.run``)
    except ProviderFailed as error:
        ctx.bill(error.attempts, purpose="interview.subtask", outcome=error.kind)  # logged; the turn fails
        raise
    except StructuredOutputError as error:
        ctx.usage = ctx.usage + error.usage
        ctx.bill(error.attempts, purpose="interview.subtask", outcome=error.kind)
        return error
    ctx.usage = ctx.usage + run.usage
    ctx.bill(run.attempts, purpose="interview.subtask", outcome="answered", model=run.model)
    return run


@dataclass(frozen=True)
class QuestionCheck:
    """What QuickCheck said of a message an ``ask`` would send: ``refusal`` is the tool's error
    for the model when it may not be sent (None when it passed), ``output`` the verdict for the
    RunStep (None when QuickCheck gave no usable answer)."""

    refusal: str | None
    output: QuickCheckResult | None


def quick_checked(
    ctx: TurnContext, env: AgentEnv, *, agent: str, handoff: str, message: str, binding: str, retry_hint: str
) -> QuestionCheck:
    """QuickCheck run on ``message`` exactly as it would be sent; a pass is remembered for this
    turn, bound to ``binding`` (the current field, or the greeting step). ``retry_hint`` tells the
    model what to write instead after a failed check."""
    run = counted(ctx, SubAgentName.QUICK_CHECK, lambda: env.subagents.quick_check(handoff, message, ctx.deadline))
    if isinstance(run, StructuredOutputError):
        return QuestionCheck(f"QuickCheck could not run ({run.kind}); nothing was sent. Call ask again.", None)
    check = run.value
    env.log.info("quick check", agent=agent, sessionId=ctx.session_id, tool="ask", passed=check.passed)
    if not check.passed:
        problems = "; ".join(f"{violation.type}: {violation.message}" for violation in check.violations or [])
        return QuestionCheck(f"QuickCheck failed: {problems}. Nothing was sent: {retry_hint}", check)
    ctx.quick_checks_passed.add((binding, normalise_question(message)))
    return QuestionCheck(None, check)
