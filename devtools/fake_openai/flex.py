"""OpenAI's processing tiers as the fake plays them (``service_tier`` on chat.completions), kept
apart from the answers and the billing so each can change on its own.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SERVICE_TIERS = frozenset({"auto", "default", "flex", "scale", "priority"})
FLEX = "flex"
# How much slower a flex answer is written than the speed profile says (an assumption: OpenAI
# publishes no figure, only "slower response times").
FLEX_SLOWDOWN = 2.0
RESOURCE_UNAVAILABLE = "resource_unavailable"


@dataclass(frozen=True)
class FlexCapacity:
    """Whether flex has room: ``short`` refuses every flex call with the 429, ``retry_after_s``
    (None: no header) is what the refusal asks the client to wait."""

    short: bool = False
    retry_after_s: float | None = None


def unknown_tier(body: dict[str, Any]) -> str | None:
    """The 400 message for a ``service_tier`` OpenAI does not know; None when it is absent or known."""
    tier = body.get("service_tier")
    if tier is None or tier in SERVICE_TIERS:
        return None
    return f"Invalid value: '{tier}'. Supported values are: 'auto', 'default', 'flex', 'scale' and 'priority'."


def tier_of(body: dict[str, Any]) -> str:
    """The tier that processes the request, as the answer reports it."""
    tier = body.get("service_tier")
    return "default" if tier in (None, "auto") else str(tier)


def is_flex(body: dict[str, Any]) -> bool:
    return body.get("service_tier") == FLEX


def flex_refusal(
    body: dict[str, Any], capacity: FlexCapacity, limit_headers: dict[str, str]
) -> tuple[dict[str, str], dict[str, Any]] | None:
    """(headers, body) of the 429 a flex call gets while flex is short of capacity; None otherwise."""
    if not (capacity.short and is_flex(body)):
        return None
    headers = dict(limit_headers)
    if capacity.retry_after_s is not None:
        headers["retry-after"] = f"{capacity.retry_after_s:g}"
        headers["retry-after-ms"] = str(max(1, round(capacity.retry_after_s * 1000)))
    error = {
        "message": "Resource Unavailable: flex processing lacks the capacity for this request. Please retry later.",
        "type": "rate_limit_error",
        "param": None,
        "code": RESOURCE_UNAVAILABLE,
    }
    return headers, {"error": error}


def flex_pace(body: dict[str, Any], first_s: float, per_token_s: float) -> tuple[float, float]:
    """The answer's pace at its tier: a flex answer ``FLEX_SLOWDOWN`` times slower."""
    if not is_flex(body):
        return first_s, per_token_s
    return first_s * FLEX_SLOWDOWN, per_token_s * FLEX_SLOWDOWN


def with_tier(payload: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """A completion or a chunk with the tier that processed it."""
    return {**payload, "service_tier": tier_of(body)}
