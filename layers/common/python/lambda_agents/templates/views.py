"""The process-template API's answers as response models (the OpenAPI contract)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..response_model import ResponseModel


class TemplateSourceView(ResponseModel):
    kind: Literal["dto", "chat"]
    session_id: str | None = Field(default=None)
    draft_seq: int | None = Field(default=None)


class RequiredArtifactView(ResponseModel):
    kind: str
    description: str | None = None


class StepView(ResponseModel):
    step_id: str
    seq: int
    name: str
    basis: Literal["goal", "prev"]
    offset_days: int
    required_artifacts: list[RequiredArtifactView]
    depends_on: list[str] = Field(description="step ids, resolved from dependsOnSeq")
    depends_on_seq: list[int]


class TemplateView(ResponseModel):
    template_id: str
    name: str
    created_at: str
    updated_at: str | None = Field(default=None, description="null until the first change")
    version: int = Field(ge=1, description="1 on create, +1 per change; the ETag, and what If-Match names")
    source: TemplateSourceView
    step_count: int
    steps: list[StepView]


class TemplateHitView(ResponseModel):
    template_id: str
    name: str
    created_at: str
    step_count: int
    score: float | None = Field(default=None, description="name similarity 0..1; null when listing without search")


class TemplateAnswer(TemplateView):
    created: bool = Field(description="false: this chat draft had already made the template, which is returned")
    similar: list[TemplateHitView] = Field(
        description="the caller's other templates with a similar name (possible duplicates), best first; "
        "the template is created all the same"
    )


class TemplateDeleted(ResponseModel):
    template_id: str
    deleted_steps: int = Field(ge=0)


class TemplateSearchAnswer(ResponseModel):
    items: list[TemplateHitView]
    count: int
    search: str | None
