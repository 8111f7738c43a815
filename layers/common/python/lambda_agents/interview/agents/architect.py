"""Architect (docs/interview.md#the-plan): designs the interview's order from the job's field definitions.

One tool, ``create_plan`` (PlanSchema), forced with tool_choice. The plan is checked in code
(``plan.validate_plan``: every field of the job exactly once, no unknown id); a rejected plan
goes back to the model with every problem named. Only the order is taken from the model. The
Architect works from the job alone, not from the conversation.
"""

from __future__ import annotations

from pydantic import BaseModel

from ...llm.types import Message, ToolChoice
from ..rules.models import AgentName, InterviewState
from ..rules.plan import PlanInvalid, validate_plan
from ..rules.state_changes import SetPlan
from .loop import AgentEnv, BaseAgent, ToolOutcome
from .prompts import state_block
from .tool_calls import FunctionCallResult, ResultBody
from .tool_inputs import CREATE_PLAN, CreatePlanInput
from .turn_context import TurnContext


class ArchitectResultBody(ResultBody):
    plan: list[str] | None = None  # the field ids in order: baked into the turn's assistant message


class ArchitectFunctionCallResult(FunctionCallResult):
    result: ArchitectResultBody


class ArchitectAgent(BaseAgent):
    name = AgentName.ARCHITECT
    tools = (CREATE_PLAN,)
    result_type = ArchitectFunctionCallResult
    temperature = 0.0
    step = "planning"

    def is_done(self, state: InterviewState) -> bool:
        return bool(state.plan)

    def get_remaining_tasks(self, ctx: TurnContext) -> list[str]:
        return [] if ctx.state.plan else ["Create the interview plan using create_plan"]

    def tool_choice(self, ctx: TurnContext) -> ToolChoice:
        return CREATE_PLAN.name

    def system_prompt(self, ctx: TurnContext) -> str:
        fields = [
            {"field_id": f.field_id, "label": f.label, "intent": f.intent, "required": f.required}
            for f in ctx.job.fields
        ]
        return "\n".join(
            [
                f"You are the Architect of a job application interview (job {ctx.job.job_id}).",
                "Order the job's fields for a natural conversation: easy factual fields first, then",
                "experience, then motivation and open questions. Return every field exactly once with create_plan,",
                "with the field_id, label, intent and required flag as given. The job's fields:",
                state_block({"agent": self.name.value, "fields": fields}),
            ]
        )

    def conversation(self, ctx: TurnContext) -> list[Message]:
        return [{"role": "user", "content": "Create the interview plan for this job."}]

    def execute_tool(self, name: str, arguments: BaseModel, ctx: TurnContext, env: AgentEnv) -> ToolOutcome:
        if not isinstance(arguments, CreatePlanInput):
            return ToolOutcome(self.error(f"{name} is not an Architect tool"))
        try:
            plan = validate_plan([field.field_id for field in arguments.fields], ctx.job)
        except PlanInvalid as error:
            return ToolOutcome(self.error(f"Plan rejected: {error}"))
        ctx.apply(SetPlan(tuple(plan)))
        ctx.baked["plan"] = plan
        env.log.info("plan created", agent=self.name.value, sessionId=ctx.session_id, tool=name, fields=len(plan))
        return ToolOutcome(self.success(f"Plan saved: {', '.join(plan)}.", plan=plan))
