"""The chat API's request bodies, validated at the edge (strings capped, no lone surrogates)."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from ..templates.text import VisibleText
from .records import SessionContext

MESSAGE_MAX_CHARS = 4000
SESSION_ID_MAX_CHARS = 64
SESSION_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
SESSION_ID_PATTERN_RE = re.compile(SESSION_ID_PATTERN)
HISTORY_PAGE_MAX = 100
SESSIONS_PAGE_MAX = 50


class CreateSessionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    context: SessionContext = Field(default_factory=SessionContext)


class PostMessageRequest(BaseModel):
    """A turn's ``message`` (sessionId from the path, userId from the token)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    message: VisibleText = Field(max_length=MESSAGE_MAX_CHARS)
