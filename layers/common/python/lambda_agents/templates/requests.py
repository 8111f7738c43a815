"""The process-template API's request bodies beyond CreateProcessTemplateDto."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .models import NAME_MAX_CHARS
from .text import VisibleText

TEMPLATE_ID_PATTERN = r"^[0-9a-f]{32}$"


class TemplateFromSessionRequest(BaseModel):
    """Optional body of ``POST /ai-agent/sessions/{id}/process-template``: a name that replaces
    the draft's (useful when a search found a near-duplicate)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: VisibleText | None = Field(default=None, max_length=NAME_MAX_CHARS)
