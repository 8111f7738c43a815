"""CreateProcessTemplateDto, the API's input, and the stored template, kept apart: the DTO speaks
in seq numbers, the stored steps in step ids.

``to_process_template`` is the one transform between them: it resolves every ``dependsOn`` seq
to the id of that step and checks the resolved id graph for a cycle before anything is written
(docs/chat-and-templates.md#resolving-dependson-in-one-transaction).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from .text import VisibleText
from .validation import (
    MAX_STEPS,
    OFFSET_DAYS_LIMIT,
    Problem,
    TemplateInvalid,
    find_cycle,
    unique_dependencies,
    validate_step_plan,
)

NAME_MAX_CHARS = 200
# Parsing is bounded separately from the rule: 51..MAX_PARSED_STEPS steps parse and then fail as
# TooManySteps (an error class the client can act on), more are a plain 400 on the body.
MAX_PARSED_STEPS = 200
MAX_ARTIFACTS = 20

Basis = Literal["goal", "prev"]
_CHAT_TEMPLATE_NAMESPACE = uuid.UUID("8f4d1c52-3b7e-4f0a-9a51-2f6a0c1d7e93")


def chat_template_id(template_link: str, draft_seq: int) -> str:
    """The id of the template made from a chat session's draft: derived, so that creating from the
    same draft twice finds the first template, and deleting the session finds every template its
    drafts made. ``template_link`` is the session's random seed (``SessionRecord.template_link``),
    which goes with the session: after its deletion no id leads back to it."""
    return uuid.uuid5(_CHAT_TEMPLATE_NAMESPACE, f"{template_link}#{draft_seq}").hex


def step_id(template_id: str, seq: int, version: int = 1) -> str:
    """Deterministic per template and version, so a retried write produces the same items; a
    version that replaces the steps gives them new ids (the old steps are gone)."""
    name = f"step-{seq}" if version == 1 else f"v{version}-step-{seq}"
    return uuid.uuid5(uuid.UUID(template_id), name).hex


class _Dto(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class RequiredArtifactDto(_Dto):
    kind: VisibleText = Field(max_length=100)
    description: str | None = Field(default=None, max_length=500)


class CreateStepTemplateDto(_Dto):
    seq: StrictInt = Field(description="1..N without gaps or duplicates (checked with the other plan rules)")
    name: VisibleText = Field(max_length=NAME_MAX_CHARS)
    basis: Basis = Field(description="'goal': offset from the goal date; 'prev': from the previous step. seq 1: goal")
    offset_days: StrictInt = Field(alias="offsetDays", ge=-OFFSET_DAYS_LIMIT, le=OFFSET_DAYS_LIMIT)
    required_artifacts: list[RequiredArtifactDto] | None = Field(
        default_factory=list, alias="requiredArtifacts", max_length=MAX_ARTIFACTS, description="null reads as []"
    )
    depends_on: list[StrictInt] | None = Field(
        default_factory=list, alias="dependsOn", max_length=MAX_PARSED_STEPS, description="earlier seqs; null = []"
    )

    @property
    def dependency_seqs(self) -> list[int]:
        return list(self.depends_on or [])


class CreateProcessTemplateDto(_Dto):
    name: VisibleText = Field(max_length=NAME_MAX_CHARS)
    step_templates: list[CreateStepTemplateDto] = Field(alias="stepTemplates", max_length=MAX_PARSED_STEPS)

    def validate_plan(self) -> None:
        """The step-plan rules (docs/chat-and-templates.md#step-plan-rules); raises TemplateInvalid."""
        validate_step_plan(self.step_templates)


class PatchProcessTemplateDto(_Dto):
    """A partial update: the name, the whole step list, or both. The steps are replaced as a
    whole (the same rules as on create apply to the new list); null or absent means unchanged."""

    name: VisibleText | None = Field(default=None, max_length=NAME_MAX_CHARS)
    step_templates: list[CreateStepTemplateDto] | None = Field(
        default=None, alias="stepTemplates", max_length=MAX_PARSED_STEPS
    )

    @model_validator(mode="after")
    def _changes_something(self) -> PatchProcessTemplateDto:
        if self.name is None and self.step_templates is None:
            raise ValueError("give name, stepTemplates or both")
        return self


@dataclass(frozen=True)
class TemplateSource:
    """Where a template came from: the API's DTO, or a chat session's draft."""

    kind: Literal["dto", "chat"]
    session_id: str | None = None
    draft_seq: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "sessionId": self.session_id, "draftSeq": self.draft_seq}


@dataclass(frozen=True)
class StepTemplate:
    step_id: str
    seq: int
    name: str
    basis: Basis
    offset_days: int
    required_artifacts: list[dict[str, Any]]
    depends_on: list[str]
    depends_on_seq: list[int]

    def as_dict(self) -> dict[str, Any]:
        """The stored and answered shape: dependsOn as step ids, dependsOnSeq as the DTO gave them."""
        return {
            "stepId": self.step_id,
            "seq": self.seq,
            "name": self.name,
            "basis": self.basis,
            "offsetDays": self.offset_days,
            "requiredArtifacts": self.required_artifacts,
            "dependsOn": self.depends_on,
            "dependsOnSeq": self.depends_on_seq,
        }


@dataclass(frozen=True)
class ProcessTemplate:
    template_id: str
    user_id: str
    name: str
    created_at: str
    source: TemplateSource
    steps: list[StepTemplate] = field(default_factory=list)
    version: int = 1
    updated_at: str | None = None

    @property
    def etag(self) -> str:
        return f'"{self.version}"'

    def as_response(self) -> dict[str, Any]:
        return {
            "templateId": self.template_id,
            "name": self.name,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "version": self.version,
            "source": self.source.as_dict(),
            "stepCount": len(self.steps),
            "steps": [step.as_dict() for step in self.steps],
        }


def to_process_template(
    dto: CreateProcessTemplateDto,
    *,
    template_id: str,
    user_id: str,
    created_at: str,
    source: TemplateSource,
    step_ids: Mapping[int, str],
) -> ProcessTemplate:
    """Validate the plan, resolve dependsOn seq -> id, check the id graph; raises TemplateInvalid.

    ``step_ids`` maps every seq to the id its step will be stored under.
    """
    dto.validate_plan()
    steps = []
    for step in sorted(dto.step_templates, key=lambda s: s.seq):
        seqs = unique_dependencies(step.dependency_seqs)
        steps.append(
            StepTemplate(
                step_id=step_ids[step.seq],
                seq=step.seq,
                name=step.name.strip(),
                basis=step.basis,
                offset_days=step.offset_days,
                required_artifacts=[
                    {"kind": artifact.kind.strip(), "description": artifact.description}
                    for artifact in step.required_artifacts or []
                ],
                depends_on=[step_ids[seq] for seq in seqs],
                depends_on_seq=seqs,
            )
        )
    cycle = find_cycle({step.step_id: step.depends_on for step in steps})
    if cycle is not None:
        # Unreachable after validate_plan (only earlier seq are allowed); kept because this is the
        # graph that is stored, and the check is on the resolved ids, not the numbers.
        raise TemplateInvalid([Problem("DependencyCycle", f"resolved step ids form a cycle: {' -> '.join(cycle)}")])
    return ProcessTemplate(template_id, user_id, dto.name.strip(), created_at, source, steps)


__all__ = [
    "MAX_STEPS",
    "CreateProcessTemplateDto",
    "CreateStepTemplateDto",
    "PatchProcessTemplateDto",
    "ProcessTemplate",
    "RequiredArtifactDto",
    "StepTemplate",
    "TemplateSource",
    "to_process_template",
]
