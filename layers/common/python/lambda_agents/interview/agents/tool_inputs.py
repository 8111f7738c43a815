"""Tool-input schemas (docs/engine.md#ai-input-schemas): what the model sends, as OpenAI strict function parameters.

Strict mode makes every property required, so an optional input is nullable, never omitted
(``str | None`` without a default). These are not the stored types (``models.py``): the
transform functions in ``tool_transforms.py`` turn them into what is stored (null -> '' or [] and
so on). ``ToolSpec.definition()`` is the OpenAI function tool built from the model's strict
schema; a schema outside the strict subset fails its unit test, not a production call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from ...llm.schema import strict_schema
from ...llm.types import ToolDefinition
from ..rules.models import MAX_FACT_NAME_CHARS, MAX_FACT_VALUE_CHARS, MAX_FACTS_PER_FIELD, MAX_FIELDS, MAX_MESSAGE_CHARS

InputT = TypeVar("InputT", bound=BaseModel)
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_MESSAGE_CHARS)]


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AskInput(_Input):
    message: Text = Field(description="The message to send to the applicant, in the applicant's language.")


class SetLanguageInput(_Input):
    language: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=40)] = Field(
        description="The language the applicant wants to use: an ISO 639-1 code such as 'ja' or 'en'."
    )


class SetCountryInput(_Input):
    country: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=80)] = Field(
        description="The country the applicant lives in: an ISO 3166-1 alpha-2 code such as 'JP', or its name."
    )


class SetTimezoneInput(_Input):
    timezone: Annotated[str, StringConstraints(strip_whitespace=True, max_length=64)] | None = Field(
        description="null to infer it from the country; an IANA zone such as 'America/Los_Angeles' only when "
        "the applicant named their time zone or city."
    )


class PlanFieldInput(_Input):
    field_id: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]
    label: Annotated[str, StringConstraints(max_length=200)]
    intent: Annotated[str, StringConstraints(max_length=1000)]
    required: bool


class CreatePlanInput(_Input):
    fields: list[PlanFieldInput] = Field(
        max_length=MAX_FIELDS, description="Every field of the job exactly once, in the order to interview them."
    )


class FactInput(_Input):
    name: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_FACT_NAME_CHARS)] = (
        Field(description="The required fact this answers (use the field's required_facts names).")
    )
    value: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_FACT_VALUE_CHARS)] = (
        Field(description="What the applicant said, briefly, in their words.")
    )


class SubtaskInput(_Input):
    """Which sub-agent to run, with what that sub-agent needs (null for what it does not). QuickCheck
    is no choice: ``ask`` runs it on the question itself."""

    agent: Literal["reviewer", "auditor"] = Field(
        description="reviewer: review the applicant's answer for the current field; auditor: the final audit "
        "after every field is done."
    )
    facts: list[FactInput] | None = Field(
        max_length=MAX_FACTS_PER_FIELD,
        description="reviewer only: the facts the applicant gave for the current field so far. null otherwise.",
    )

    @model_validator(mode="after")
    def _arguments_fit_the_agent(self) -> SubtaskInput:
        if self.agent == "reviewer" and self.facts is None:
            raise ValueError("facts is required when agent is reviewer (an empty list when there are none)")
        return self


@dataclass(frozen=True)
class ToolSpec(Generic[InputT]):
    name: str
    description: str
    input_model: type[InputT]

    def definition(self) -> ToolDefinition:
        return ToolDefinition(self.name, self.description, strict_schema(self.input_model))


ASK = ToolSpec(
    "ask",
    "Send a message to the applicant and wait for their reply. QuickCheck checks it first: when it passes, the "
    "message is sent and your turn ends; when it fails, you get the violations and nothing is sent.",
    AskInput,
)
SET_LANGUAGE = ToolSpec("set_language", "Set the language the applicant wants to use.", SetLanguageInput)
SET_COUNTRY = ToolSpec("set_country", "Set the country the applicant lives in.", SetCountryInput)
SET_TIMEZONE = ToolSpec(
    "set_timezone",
    "Set the applicant's time zone, inferred from their country unless they named one.",
    SetTimezoneInput,
)
CREATE_PLAN = ToolSpec(
    "create_plan", "Return the interview plan: the job's fields in interview order.", CreatePlanInput
)
SUBTASK = ToolSpec(
    "subtask", "Run a sub-agent (reviewer or auditor) in its own session and get its result.", SubtaskInput
)
