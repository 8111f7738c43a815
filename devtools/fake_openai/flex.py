"""OpenAI's processing tiers as the fake plays them (``service_tier`` on chat.completions), kept
apart from the answers and the billing so each can change on its own.

What OpenAI documents, and the fake does:
- ``service_tier`` takes ``auto``, ``default``, ``flex``, ``scale`` or ``priority``; another value is a
  400 ``invalid_request_error``. The answer says which tier processed it (``service_tier``, in the
  whole completion and in every chunk of a stream): ``flex`` for a flex call, ``default`` for a call
  that asked for none, ``auto`` or ``default``.
- Flex processing (the flex guide): "slower response times and occasional resource unavailability";
  tokens "priced at Batch API rates". When flex "lack[s] sufficient resources" the call is refused
  with ``429 Resource Unavailable``, and "you will not be charged when this occurs". The fake is
  told when it is short (``FlexCapacity``): it then refuses every flex call with that 429 (code
  ``resource_unavailable``, the account's ``x-ratelimit-*`` headers, a ``retry-after`` only when
  one is set), counts nothing against the account's limits and bills nothing; other tiers are
  served as usual.
- Slower: the guide gives no figure. The fake writes a flex answer ``FLEX_SLOWDOWN`` times slower
  than its speed profile (the first token and each token after it), so a client's patience for
  flex is exercised, never its speed assumed.
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
