"""Page cursors, the one way every listing pages: opaque to clients, validated when they come back.

A cursor is URL-safe base64 of ``{"v": 1, "s": <scope digest>, "p": <position>}``. The scope is
the resource being paged (one session's messages, one user's sessions, one job's applications,
one platform's pending posts): a cursor issued for another scope, edited by hand or simply
garbled is an ``InvalidCursor``, never a storage error or a page of someone else's data. Every
API answers it the same way (``api.resolver``: 400 ``INVALID_CURSOR`` naming the query
parameter). This module sits on the layer's lowest floor, so storage adapters page with it too.
The position is checked again by the code that reads it (its shape and types), so a cursor can
only ever point inside the caller's own scope. Cursors are not secret and carry no expiry: they
name a position, and reading past a deleted item is harmless.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from .errors import DomainError

CURSOR_PATTERN = r"^[A-Za-z0-9_-]{1,512}$"
CURSOR_MAX_CHARS = 512
_VERSION = 1


class InvalidCursor(DomainError):
    """A cursor this API did not issue for this listing: 400 ``INVALID_CURSOR`` naming the query
    parameter that carried it (``cursor``; the pending-posts API calls it ``nextToken``, docs/nudges.md)."""

    code = "INVALID_CURSOR"

    def __init__(self, reason: str, parameter: str = "cursor") -> None:
        field = f"query.{parameter}"
        super().__init__(f"invalid {field}: {reason}", details=[{"field": field}])
        self.reason = reason
        self.parameter = parameter


def _scope_digest(scope: str) -> str:
    return hashlib.sha256(scope.encode("utf-8")).hexdigest()[:16]


def encode_cursor(scope: str, position: Mapping[str, str | int]) -> str:
    payload = json.dumps({"v": _VERSION, "s": _scope_digest(scope), "p": dict(position)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(payload.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(token: str, scope: str, parameter: str = "cursor") -> dict[str, Any]:
    """The position inside ``token``; InvalidCursor (naming ``parameter``) when it was not issued
    for ``scope``."""
    if not token or len(token) > CURSOR_MAX_CHARS:
        raise InvalidCursor("cursor is not one this API issued", parameter)
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        value = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise InvalidCursor("cursor is not one this API issued", parameter) from None
    if not isinstance(value, dict) or value.get("v") != _VERSION or not isinstance(value.get("p"), dict):
        raise InvalidCursor("cursor is not one this API issued", parameter)
    if value.get("s") != _scope_digest(scope):
        raise InvalidCursor("cursor was issued for another listing", parameter)
    position: dict[str, Any] = value["p"]
    return position


def decode_key(token: str, scope: str, names: frozenset[str], parameter: str = "cursor") -> dict[str, str]:
    """A cursor whose position is a table key (``encode_cursor(scope, key)``): exactly ``names``,
    every value text; InvalidCursor for any other shape."""
    key = decode_cursor(token, scope, parameter)
    if set(key) != names or not all(isinstance(value, str) for value in key.values()):
        raise InvalidCursor("cursor is not one this API issued", parameter)
    return key


# Longer than any ISO 8601 timestamp the product writes; the position's time is compared as text.
CREATED_AT_MAX_CHARS = 64


def encode_created_position(scope: str, created_at: str, id_name: str, item_id: str) -> str:
    """A cursor to the item created at ``created_at`` in a newest-first listing (ties broken by id)."""
    return encode_cursor(scope, {"createdAt": created_at, id_name: item_id})


def decode_created_position(
    token: str, scope: str, id_name: str, id_pattern: re.Pattern[str], created_at_max: int = CREATED_AT_MAX_CHARS
) -> tuple[str, str]:
    """``(created_at, item_id)`` of a cursor from ``encode_created_position``; InvalidCursor for any
    other shape. No ``#`` in the time: listings put ``<createdAt>#<id>`` in their index sort keys."""
    position = decode_cursor(token, scope)
    created_at, item_id = position.get("createdAt"), position.get(id_name)
    if (
        set(position) != {"createdAt", id_name}
        or not isinstance(created_at, str)
        or not isinstance(item_id, str)
        or not 0 < len(created_at) <= created_at_max
        or "#" in created_at
        or not id_pattern.fullmatch(item_id)
    ):
        raise InvalidCursor("cursor is not one this API issued")
    return created_at, item_id
