"""Interviewer (docs/interview.md#fields): conducts the interview field by field with ask and subtask(*).

Every question goes ask -> (QuickCheck, in code) -> (the applicant answers) -> reviewer. The
invariants are enforced here and in the reducer, not by the prompt; a refused call goes back to
the model as the tool's error result and never reaches the applicant:

- ``ask`` runs QuickCheck on its exact message before the question counts as asked (bound to the
  current field); a failed check is the tool's error result with the violations, and the model
  writes another ``ask``. The model writes the question once, and cannot skip or reorder the
  check. ``ask`` is refused while an answer awaits review, and once every field is done;
- ``subtask(reviewer)`` runs only on an applicant answer to the current field's question, once
  per answer; it records the facts, moves the field to reviewing, and then to done (a pass: the
  system advances to the next field) or back to interviewing (feedback, missing facts);
- ``subtask(auditor)`` runs only when every field is done; a passed audit completes the
  application (the reducer also checks every required field is done), a failed one ends it as
  ``audit_failed``, for a person to review.

Sub-agent failures that are the model's (invalid or refused output) come back as error results;
transport failures and the deadline propagate (the turn is not written).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from ...llm import StructuredOutputError
from ..rules.compliance import PROHIBITED_TOPICS, bullet_list
from ..rules.current_field import advance_field
from ..rules.handoff import facts_block, field_block, handoff_summary
from ..rules.models import MAX_FACTS_PER_FIELD, AgentName, FieldStatus, InterviewState, SessionStatus, SubAgentName
from ..rules.state_changes import AddFacts, FinishInterview, SetAskedField, SetAudit, SetFieldStatus
from .loop import AgentEnv, BaseAgent, ToolOutcome
from .prompts import language_rule, state_block
from .reviewers import AuditResult, QuickCheckResult, ReviewResult
from .sub_sessions import counted, quick_checked
from .tool_calls import FunctionCallResult, ResultBody
from .tool_inputs import ASK, SUBTASK, AskInput, SubtaskInput
from .tool_transforms import transform_to_audit_record, transform_to_facts, transform_to_review
from .turn_context import TurnContext


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
            return [f"Ask your next question about field {state.current_field_id} with ask(message='<the question>')"]
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
            "The system gives you the current field. For every question:",
            "1. ask(message=<the question>): QuickCheck checks it before it is sent; when it fails, you get the",
            "   violations and nothing is sent: write a different question and ask again;",
            "2. after the applicant answers, subtask(agent='reviewer', facts=[{name, value}, ...]) with the facts",
            "   they gave for the current field (name = one of its required facts);",
            "3. reviewer passed: the system moves to the next field. Not passed: ask a natural follow-up question",
            "   about the missing facts.",
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
                }
            ),
        ]
        return "\n".join(parts)

    def execute_tool(self, name: str, arguments: BaseModel, ctx: TurnContext, env: AgentEnv) -> ToolOutcome:
        if isinstance(arguments, AskInput):
            return self._ask(arguments, ctx, env)
        if isinstance(arguments, SubtaskInput):
            if arguments.agent == "reviewer":
                return ToolOutcome(self._review(arguments, ctx, env))
            return ToolOutcome(self._audit(ctx, env))
        return ToolOutcome(self.error(f"{name} is not an Interviewer tool"))

    # -- ask -------------------------------------------------------------------------------------

    def _ask(self, arguments: AskInput, ctx: TurnContext, env: AgentEnv) -> ToolOutcome:
        """The question counts as asked, and goes to the applicant, only once QuickCheck passed its
        exact text for the current field."""
        if ctx.answer_needs_review:
            return ToolOutcome(
                self.error(
                    "ask rejected: the applicant's answer has not been reviewed. Run subtask(agent='reviewer') "
                    "first; a field advances only after the Reviewer."
                )
            )
        field_id = ctx.state.current_field_id
        if field_id is None:
            return ToolOutcome(self.error("ask rejected: every field is done. Run subtask(agent='auditor')."))
        check = quick_checked(
            ctx,
            env,
            agent=self.name.value,
            handoff=handoff_summary(ctx.transcript, ctx.state, ctx.job, field_id),
            message=arguments.message,
            binding=field_id,
            retry_hint="write a different question about the current field and call ask with it.",
        )
        if check.refusal is not None:
            return ToolOutcome(self.error(check.refusal, quick_check_output=check.output))
        ctx.apply(SetAskedField(field_id))
        ctx.baked["fieldId"] = field_id
        return ToolOutcome(
            self.success("Question sent; waiting for the applicant's answer.", quick_check_output=check.output),
            reply=arguments.message,
        )

    # -- subtask(reviewer) -----------------------------------------------------------------------

    def _review(self, arguments: SubtaskInput, ctx: TurnContext, env: AgentEnv) -> FunctionCallResult:
        field_id = ctx.state.current_field_id
        if field_id is None or not ctx.answer_needs_review:
            return self.error("reviewer refused: there is no new applicant answer to review. Ask a question first.")
        facts = transform_to_facts(arguments.facts)
        merged = {**ctx.state.fields[field_id].facts, **dict(facts)}
        if len(merged) > MAX_FACTS_PER_FIELD:
            return self.error(f"reviewer refused: at most {MAX_FACTS_PER_FIELD} facts per field; merge some.")
        if facts:
            ctx.apply(AddFacts(field_id, facts))
        ctx.apply(SetFieldStatus(field_id, FieldStatus.REVIEWING))
        handoff = handoff_summary(ctx.transcript, ctx.state, ctx.job, field_id)
        run = counted(ctx, SubAgentName.REVIEWER, lambda: env.subagents.review(handoff, ctx.deadline))
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
                "Ask a natural follow-up question about what is missing.",
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
            f"Reviewer passed {field_id}. Next field: {upcoming} ({label}). Ask your first question about it.",
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
        run = counted(ctx, SubAgentName.AUDITOR, lambda: env.subagents.audit(handoff, ctx.deadline))
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
