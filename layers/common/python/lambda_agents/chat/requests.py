"""The chat API's request bodies, validated at the edge (strings capped, no lone surrogates)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ..templates.text import VisibleText
from .records import SessionContext

MESSAGE_MAX_CHARS = 4000
SESSION_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"


def is_json_array(body: str | None) -> bool:
    """True for a JSON array body. Powertools validates the FIRST ELEMENT of an array body against
    a route's model (its sequence handling), so ``[{"message": "hi"}]`` would pass as an object;
    every body of these routes is an object, and the routes refuse arrays with this check."""
    return bool(body) and str(body).lstrip().startswith("[")


class CreateSessionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    context: SessionContext = Field(default_factory=SessionContext)


class PostMessageRequest(BaseModel):
    """Spec 001 2.3 ProcessMessageInput's ``message`` (sessionId from the path, userId from the token)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    message: VisibleText = Field(max_length=MESSAGE_MAX_CHARS)
