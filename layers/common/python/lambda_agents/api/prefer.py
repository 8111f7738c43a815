"""The ``Prefer`` request header (RFC 7240): a client that would rather be answered later than
wait says ``Prefer: respond-async``, and a route that honours it says ``Preference-Applied``."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Header

PREFER_MAX_CHARS = 256
PreferHeader = Annotated[
    str | None,
    Header(
        alias="Prefer",
        max_length=PREFER_MAX_CHARS,
        description="respond-async: answer 202 at once and let the client read the answer when it is ready",
    ),
]


def respond_async(prefer: str | None) -> bool:
    """Whether the header asks for ``respond-async`` (preferences are comma-separated, tokens case-insensitive)."""
    if not prefer:
        return False
    return any(part.split(";", 1)[0].split("=", 1)[0].strip().lower() == "respond-async" for part in prefer.split(","))
