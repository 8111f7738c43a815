"""The process-template API's answers as response models (the OpenAPI contract)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _View(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class TemplateSourceView(_View):
    kind: Literal["dto", "chat"]
    session_id: str | None = Field(default=None, alias="sessionId")
    draft_seq: int | None = Field(default=None, alias="draftSeq")


class RequiredArtifactView(_View):
    kind: str
    description: str | None = None


class StepView(_View):
    step_id: str = Field(alias="stepId")
    seq: int
    name: str
    basis: Literal["goal", "prev"]
    offset_days: int = Field(alias="offsetDays")
    required_artifacts: list[RequiredArtifactView] = Field(alias="requiredArtifacts")
    depends_on: list[str] = Field(alias="dependsOn", description="step ids, resolved from dependsOnSeq")
    depends_on_seq: list[int] = Field(alias="dependsOnSeq")


class TemplateAnswer(_View):
    template_id: str = Field(alias="templateId")
    name: str
    created_at: str = Field(alias="createdAt")
    source: TemplateSourceView
    step_count: int = Field(alias="stepCount")
    steps: list[StepView]
    created: bool = Field(description="false: this chat draft had already made the template, which is returned")


class TemplateHitView(_View):
    template_id: str = Field(alias="templateId")
    name: str
    created_at: str = Field(alias="createdAt")
    step_count: int = Field(alias="stepCount")
    score: float | None = Field(default=None, description="name similarity 0..1; null when listing without search")


class TemplateSearchAnswer(_View):
    items: list[TemplateHitView]
    count: int
    search: str | None
