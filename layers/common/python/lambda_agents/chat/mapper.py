"""TemplateDraftMapper: AiChatProcessTemplateJson -> CreateProcessTemplateDto
(docs/chat-and-templates.md#the-template-draft-mapper).

The explicit transform from the AI-input shape to the API's DTO (docs/engine.md#transforms): nulls
become the DTO's empty values (``requiredArtifacts: null`` -> ``[]``, ``dependsOn: null`` -> ``[]``), a
draft without a name takes ``default_name`` (from the session context), and the draft's
``answer`` / ``missing_information`` stay behind: they are conversation, not template.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ..templates.models import CreateProcessTemplateDto
from ..templates.validation import Problem, TemplateInvalid
from ..validation_errors import describe_errors
from .draft_schema import AiChatProcessTemplateJson


class TemplateDraftMapper:
    def to_create_dto(
        self,
        draft: AiChatProcessTemplateJson | dict[str, Any],
        *,
        default_name: str,
        name: str | None = None,
    ) -> CreateProcessTemplateDto:
        """Raises TemplateInvalid (``NoTemplateDraft`` / ``ValidationFailed``) when there is
        nothing to map or the stored JSON no longer validates (written by an older version)."""
        try:
            parsed = AiChatProcessTemplateJson.model_validate(draft)
        except ValidationError as error:
            first = describe_errors(error, limit=1)[0]
            raise TemplateInvalid([Problem("ValidationFailed", f"stored draft: {first}")]) from None
        body = parsed.process_template_draft
        if body is None:
            raise TemplateInvalid([Problem("NoTemplateDraft", "the answer's JSON holds no process_template_draft")])
        chosen = next((n.strip() for n in (name, body.name, default_name) if n is not None and n.strip()), default_name)
        try:
            return CreateProcessTemplateDto.model_validate(
                {
                    "name": chosen,
                    "stepTemplates": [
                        {
                            "seq": step.seq,
                            "name": step.name,
                            "basis": step.basis,
                            "offsetDays": step.offset_days,
                            "requiredArtifacts": [
                                {"kind": artifact.kind, "description": artifact.description}
                                for artifact in step.required_artifacts or []
                            ],
                            "dependsOn": list(step.depends_on or []),
                        }
                        for step in body.step_templates
                    ],
                }
            )
        except ValidationError as error:
            raise TemplateInvalid([Problem("ValidationFailed", describe_errors(error, limit=1)[0])]) from None
