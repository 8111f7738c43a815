"""``ai_chat_process_template.v1`` (docs/chat-and-templates.md#the-draft-schema): the JSON the model writes at the
end of its answer, as an AI-input schema kept apart from the stored template.

AI-input conventions (docs/engine.md#ai-input-schemas): every field is present and nullable, never optional; the
prompt asks for every key, null when there is nothing to say. A model that leaves out a nullable
key said the same thing, so a missing nullable key reads as null (``_absent_is_null``); a missing
required key, a wrong type (strict: no "3" for 3, no 3.5 or true for an integer), or a value out
of range is a validation failure. Unknown keys are ignored: a model adding a "notes" key has not
broken the contract.

The limits equal the CreateProcessTemplateDto's, so a valid draft always maps to a valid DTO.
"""

from __future__ import annotations

import functools
import types
import typing
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..templates.models import MAX_ARTIFACTS, MAX_PARSED_STEPS, NAME_MAX_CHARS
from ..templates.text import VisibleText
from ..templates.validation import OFFSET_DAYS_LIMIT

ANSWER_MAX_CHARS = 4000
MISSING_INFORMATION_MAX_ITEMS = 20
MISSING_ITEM_MAX_CHARS = 200


class AiChatSchemaId(StrEnum):
    PROCESS_TEMPLATE_V1 = "ai_chat_process_template.v1"


SCHEMA_ID = AiChatSchemaId.PROCESS_TEMPLATE_V1.value


def _nullable(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return type(None) in typing.get_args(annotation)
    return False


@functools.cache
def _nullable_keys(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    """(JSON key, attribute name) of every nullable field of ``model``."""
    return tuple((info.alias or name, name) for name, info in model.model_fields.items() if _nullable(info.annotation))


class _AiInput(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", populate_by_name=True, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _absent_is_null(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        missing = [key for key, name in _nullable_keys(cls) if key not in data and name not in data]
        return {**data, **dict.fromkeys(missing)} if missing else data


class RequiredArtifactDraft(_AiInput):
    kind: VisibleText = Field(max_length=100)
    description: str | None = Field(max_length=500)


class StepTemplateDraft(_AiInput):
    seq: int
    name: VisibleText = Field(max_length=NAME_MAX_CHARS)
    basis: Literal["goal", "prev"]
    offset_days: int = Field(alias="offsetDays", ge=-OFFSET_DAYS_LIMIT, le=OFFSET_DAYS_LIMIT)
    required_artifacts: list[RequiredArtifactDraft] | None = Field(alias="requiredArtifacts", max_length=MAX_ARTIFACTS)
    depends_on: list[int] | None = Field(alias="dependsOn", max_length=MAX_PARSED_STEPS)

    @property
    def dependency_seqs(self) -> list[int]:
        return list(self.depends_on or [])


class ProcessTemplateDraft(_AiInput):
    name: VisibleText | None = Field(max_length=NAME_MAX_CHARS)
    step_templates: list[StepTemplateDraft] = Field(alias="stepTemplates", max_length=MAX_PARSED_STEPS)


class AiChatProcessTemplateJson(_AiInput):
    schema_id: Literal["ai_chat_process_template.v1"] = Field(alias="schema")
    answer: VisibleText = Field(max_length=ANSWER_MAX_CHARS)
    missing_information: list[Annotated[str, Field(max_length=MISSING_ITEM_MAX_CHARS)]] | None = Field(
        max_length=MISSING_INFORMATION_MAX_ITEMS
    )
    process_template_draft: ProcessTemplateDraft | None

    def as_json(self) -> dict[str, Any]:
        """The canonical JSON (every key present, null where absent), as written in the fence."""
        return self.model_dump(by_alias=True, mode="json")
