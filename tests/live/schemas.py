"""Every output schema the functions send a provider, by name, with a prompt that asks for it."""

from __future__ import annotations

from lambda_agents.interview.agents.reviewers import AuditResult, QuickCheckResult, ReviewResult
from lambda_agents.judge.models import EvaluationAnswer, StepAnswer
from lambda_agents.llm import ChatModel, Message, OutputInvalid, Strategy, StructuredOptions, generate_structured
from lambda_agents.nudges.schema import create_agent_output_model
from pydantic import BaseModel

OUTPUT_SCHEMAS: dict[str, type[BaseModel]] = {
    "nudges.commander (15 slots)": create_agent_output_model(15),
    "judge.structured_output (judgment.json)": StepAnswer,
    "judge.ai_judge (evaluation.json)": EvaluationAnswer,
    "interview.quick_check": QuickCheckResult,
    "interview.reviewer": ReviewResult,
    "interview.auditor": AuditResult,
}


def prompt_for(schema: str) -> list[Message]:
    return [
        {"role": "system", "content": "You produce test data. Answer with one object of the requested schema."},
        {"role": "user", "content": f"Produce a short, plausible example of '{schema}'. Indexes start at 1."},
    ]


def ask(model: ChatModel, schema: str, strategy: Strategy) -> BaseModel | None:
    """The validated answer, or None when the provider took the request and answered but the
    answer failed the output's own checks (a plausibility rule, or no JSON in a prompted answer).
    A provider that rejects the schema or the request raises (ProviderFailed), as in production."""
    try:
        return generate_structured(
            model, OUTPUT_SCHEMAS[schema], prompt_for(schema), StructuredOptions(strategy=strategy)
        ).value
    except OutputInvalid:
        return None
