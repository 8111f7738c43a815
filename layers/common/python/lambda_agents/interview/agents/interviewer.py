"""Interviewer (docs/interview.md#fields): conducts the interview field by field with subtask(*) and ask.

Every question goes quick_check -> ask -> (the applicant answers) -> reviewer. The invariants are
enforced here and in the reducer, not by the prompt; a refused call goes back to the model as
the tool's error result and never reaches the applicant:

- ``ask`` is refused unless a QuickCheck passed, in this turn, for the current field and this
  exact question (whitespace aside); also while an answer awaits review, and once every field
  is done;
- ``subtask(reviewer)`` runs only on an applicant answer to the current field's question, once
  per answer; it records the facts, moves the field to reviewing, and then to done (a pass: the
  system advances to the next field) or back to interviewing (feedback, missing facts);
- ``subtask(auditor)`` runs only when every field is done; a passed audit completes the
  application (the reducer also checks every required field is done), a failed one ends it as
  ``audit_failed``, for a person to review;
- ``subtask(quick_check)`` is refused while an answer awaits review: the Reviewer comes first.

Sub-agent failures that are the model's (invalid or refused output) come back as error results;
transport failures and the deadline propagate (the turn is not written).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from ...llm import StructuredOutputError, StructuredResult
from ...llm.errors import DeadlineReached, ProviderFailed
from ..rules.compliance import PROHIBITED_TOPICS, bullet_list
from ..rules.current_field import advance_field
from ..rules.handoff import facts_block, field_block, handoff_summary
from ..rules.models import MAX_FACTS_PER_FIELD, AgentName, FieldStatus, InterviewState, SessionStatus
from ..rules.state_changes import AddFacts, FinishInterview, SetAskedField, SetAudit, SetFieldStatus
from .loop import AgentEnv, BaseAgent, ToolOutcome
from .prompts import language_rule, state_block
from .reviewers import AuditResult, QuickCheckResult, ReviewResult
from .tool_calls import FunctionCallResult, ResultBody
from .tool_inputs import ASK, SUBTASK, AskInput, SubtaskInput
from .tool_transforms import transform_to_audit_record, transform_to_facts, transform_to_review
from .turn_context import TurnContext, normalise_question


class InterviewerResultBody(ResultBody):
    """The sub-agent's output is returned to the caller (RunStep, additionalData), not to the model."""

    quick_check_output: QuickCheckResult | None = None
    reviewer_output: ReviewResult | None = None
    auditor_output: AuditResult | None = None


class InterviewerFunctionCallResult(FunctionCallResult):
    result: InterviewerResultBody


class InterviewerAgent(BaseAgent):
    name = AgentName.INTERVIEWER
    tools = (SUBTASK, ASK)
    result_type = InterviewerFunctionCallResult

    def is_done(self, state: InterviewState) -> bool:
        return state.finished

    def get_remaining_tasks(self, ctx: TurnContext) -> list[str]:
        state = ctx.state
        if state.finished:
            return []
        if ctx.answer_needs_review:
            return ["Review the applicant's answer with subtask(agent='reviewer', facts=[...the facts they gave...])"]
        if state.current_field_id is not None:
            return [
                f"Check your next question about field {state.current_field_id} with "
                "subtask(agent='quick_check', question='<the exact question>')",
                "Then ask that exact question with ask(message='<the same question>')",
            ]
        if state.every_field_settled and state.audit is None:
            return ["Run the final audit with subtask(agent='auditor')"]
        return []

    def system_prompt(self, ctx: TurnContext) -> str:
        state = ctx.state
        plan_lines = [
            f"- {field_id}: {ctx.job.field(field_id).label} [{state.fields[field_id].status.value}]"
            for field_id in state.plan
        ]
        parts = [
            f"You are the Interviewer of a job application interview (job {ctx.job.job_id}).",
            "The system gives you the current field. For every question you ask:",
            "1. subtask(agent='quick_check', question=<the exact question>) first;",
            "2. when it passed, ask(message=<exactly the same question>);",
            "3. after the applicant answers, subtask(agent='reviewer', facts=[{name, value}, ...]) with the facts",
            "   they gave for the current field (name = one of its required facts);",
            "4. reviewer passed: the system moves to the next field. Not passed: ask a natural follow-up question",
            "   about the missing facts, again quick_check first.",
            "When every field is done, run subtask(agent='auditor').",
            "One question at a time. Never ask about these topics:",
            bullet_list(PROHIBITED_TOPICS),
            language_rule(state.language),
            "",
            "## Plan",
            "\n".join(plan_lines) or "(no plan)",
        ]
        if state.current_field_id is not None:
            progress = state.fields[state.current_field_id]
            parts += [
                "",
                "## Current field",
                field_block(ctx.job.field(state.current_field_id)),
                "",
                "## Facts collected for it",
                facts_block(state, ctx.job, only=state.current_field_id),
            ]
            if progress.reviews and (progress.missing_facts or progress.feedback):
                parts += [
                    "",
                    "## Last review",
                    f"missing facts: {', '.join(progress.missing_facts) or '(none)'}",
                    f"feedback: {progress.feedback or '(none)'}",
                ]
        elif state.every_field_settled:
            parts += ["", "Every field is done: run the final audit with subtask(agent='auditor')."]
        parts += [
            "",
            f"Answer awaiting review: {'yes' if ctx.answer_needs_review else 'no'}",
            state_block(
                {
                    "agent": self.name.value,
                    "current_field": _field_data(ctx, state.current_field_id),
                    "answer_needs_review": ctx.answer_needs_review,
                    "all_fields_done": state.every_field_settled,
                    "language": state.language,
                    "passed_questions": sorted(q for f, q in ctx.quick_checks_passed if f == state.current_field_id),
                }
            ),
        ]
        return "\n".join(parts)

    def execute_tool(self, name: str, arguments: BaseModel, ctx: TurnContext, env: AgentEnv) -> ToolOutcome:
        if isinstance(arguments, AskInput):
            return self._ask(arguments, ctx)
        if isinstance(arguments, SubtaskInput):
            if arguments.agent == "quick_check":
                return ToolOutcome(self._quick_check(arguments.question or "", ctx, env))
            if arguments.agent == "reviewer":
                return ToolOutcome(self._review(arguments, ctx, env))
            return ToolOutcome(self._audit(ctx, env))
        return ToolOutcome(self.error(f"{name} is not an Interviewer tool"))

    # -- ask -------------------------------------------------------------------------------------

    def _ask(self, arguments: AskInput, ctx: TurnContext) -> ToolOutcome:
        state = ctx.state
        if ctx.answer_needs_review:
            return ToolOutcome(
                self.error(
                    "ask rejected: the applicant's answer has not been reviewed. Run subtask(agent='reviewer') "
                    "first; a field advances only after the Reviewer."
                )
            )
        field_id = state.current_field_id
        if field_id is None:
            return ToolOutcome(self.error("ask rejected: every field is done. Run subtask(agent='auditor')."))
        if (field_id, normalise_question(arguments.message)) not in ctx.quick_checks_passed:
            return ToolOutcome(
                self.error(
                    "ask rejected: no QuickCheck passed for this exact question in this turn. Run "
                    "subtask(agent='quick_check', question=<this exact text>) first, then ask it unchanged."
                )
            )
        ctx.apply(SetAskedField(field_id))
        ctx.baked["fieldId"] = field_id
        return ToolOutcome(self.success("Question sent; waiting for the applicant's answer."), reply=arguments.message)

    # -- subtask(quick_check) --------------------------------------------------------------------

    def _quick_check(self, question: str, ctx: TurnContext, env: AgentEnv) -> FunctionCallResult:
        field_id = ctx.state.current_field_id
        if ctx.answer_needs_review:
            return self.error(
                "quick_check refused: review the applicant's answer first with subtask(agent='reviewer')."
            )
        if field_id is None:
            return self.error("quick_check refused: every field is done. Run subtask(agent='auditor').")
        handoff = handoff_summary(ctx.transcript, ctx.state, ctx.job, field_id)
        run = counted(ctx, lambda: env.subagents.quick_check(handoff, question, ctx.deadline))
        if isinstance(run, StructuredOutputError):
            return self.error(f"QuickCheck could not run ({run.kind}); call it again.")
        check = run.value
        env.log.info(
            "quick check", agent=self.name.value, sessionId=ctx.session_id, tool="subtask", passed=check.passed
        )
        if check.passed:
            ctx.quick_checks_passed.add((field_id, normalise_question(question)))
            return self.success("QuickCheck passed. Ask exactly this question now with ask.", quick_check_output=check)
        problems = "; ".join(f"{violation.type}: {violation.message}" for violation in check.violations or [])
        return self.success(
            f"QuickCheck failed: {problems}. Write a different question and check it again.", quick_check_output=check
        )

    # -- subtask(reviewer) -----------------------------------------------------------------------

    def _review(self, arguments: SubtaskInput, ctx: TurnContext, env: AgentEnv) -> FunctionCallResult:
        field_id = ctx.state.current_field_id
        if field_id is None or not ctx.answer_needs_review:
            return self.error(
                "reviewer refused: there is no new applicant answer to review. Check and ask a question first."
            )
        facts = transform_to_facts(arguments.facts)
        merged = {**ctx.state.fields[field_id].facts, **dict(facts)}
        if len(merged) > MAX_FACTS_PER_FIELD:
            return self.error(f"reviewer refused: at most {MAX_FACTS_PER_FIELD} facts per field; merge some.")
        if facts:
            ctx.apply(AddFacts(field_id, facts))
        ctx.apply(SetFieldStatus(field_id, FieldStatus.REVIEWING))
        handoff = handoff_summary(ctx.transcript, ctx.state, ctx.job, field_id)
        run = counted(ctx, lambda: env.subagents.review(handoff, ctx.deadline))
        if isinstance(run, StructuredOutputError):
            ctx.apply(SetFieldStatus(field_id, FieldStatus.INTERVIEWING))
            return self.error(f"The Reviewer could not run ({run.kind}); call subtask(agent='reviewer') again.")
        review = run.value
        ctx.apply(transform_to_review(field_id, review), SetAskedField(None))
        ctx.answer_needs_review = False
        env.log.info(
            "field reviewed", agent=self.name.value, sessionId=ctx.session_id, tool="subtask", passed=review.passed
        )
        if not review.passed:
            missing = ", ".join(review.missing_facts or []) or "(see feedback)"
            return self.success(
                f"Reviewer: not yet. Missing facts: {missing}. Feedback: {review.feedback or '(none)'}. "
                "Ask a natural follow-up question about what is missing (quick_check first).",
                reviewer_output=review,
            )
        ctx.baked.setdefault("fieldsCompleted", []).append(field_id)
        ctx.apply(*advance_field(ctx.state))
        upcoming = ctx.state.current_field_id
        if upcoming is None:
            return self.success(
                f"Reviewer passed {field_id}. Every field is done: run subtask(agent='auditor').",
                reviewer_output=review,
            )
        label = ctx.job.field(upcoming).label
        return self.success(
            f"Reviewer passed {field_id}. Next field: {upcoming} ({label}). Check your first question about it "
            "with quick_check, then ask it.",
            reviewer_output=review,
        )

    # -- subtask(auditor) ------------------------------------------------------------------------

    def _audit(self, ctx: TurnContext, env: AgentEnv) -> FunctionCallResult:
        if ctx.state.finished:
            # e.g. a second auditor call in the same answer: no sub-agent call is paid for it.
            return self.error(f"auditor refused: the interview is already {ctx.state.status.value}.")
        if not ctx.state.every_field_settled:
            return self.error(
                f"auditor refused: field {ctx.state.current_field_id} is not done yet; "
                "the Auditor runs after the last field."
            )
        handoff = handoff_summary(ctx.transcript, ctx.state, ctx.job, None, budget_tokens=8000)
        run = counted(ctx, lambda: env.subagents.audit(handoff, ctx.deadline))
        if isinstance(run, StructuredOutputError):
            return self.error(f"The Auditor could not run ({run.kind}); call subtask(agent='auditor') again.")
        record = transform_to_audit_record(run.value)
        status = SessionStatus.COMPLETED if record.passed else SessionStatus.AUDIT_FAILED
        ctx.apply(SetAudit(record), FinishInterview(status))
        ctx.baked["audit"] = record.model_dump(mode="json")
        env.log.info(
            "audit done",
            agent=self.name.value,
            sessionId=ctx.session_id,
            tool="subtask",
            passed=record.passed,
            violations=len(record.violations),
        )
        return self.success(
            f"Audit {'passed' if record.passed else 'failed'}; the interview is over.", auditor_output=run.value
        )


def _field_data(ctx: TurnContext, field_id: str | None) -> dict[str, Any] | None:
    if field_id is None:
        return None
    field = ctx.job.field(field_id)
    progress = ctx.state.fields[field_id]
    return {
        **json.loads(field.model_dump_json()),
        "status": progress.status.value,
        "facts": progress.facts,
        "missing_facts": progress.missing_facts,
    }


OutputT = TypeVar("OutputT", bound=BaseModel)


def counted(
    ctx: TurnContext, sub_session: Callable[[], StructuredResult[OutputT]]
) -> StructuredResult[OutputT] | StructuredOutputError:
    """A sub-session's result, or the error of an answer it could not use, its tokens counted
    either way. A failing provider and the deadline are raised: they end the turn, not the call."""
    try:
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
