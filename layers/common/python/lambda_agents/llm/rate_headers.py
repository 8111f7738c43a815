"""Reading the account's ``x-ratelimit-*`` headers as OpenAI writes them (names without the prefix):
``limit-{requests,tokens}``, ``remaining-*`` and ``reset-*``, the time until the bucket is full
again as a Go duration ("6m0s", "1s", "20ms"). ``rate_budget`` follows the account with them; a
429's say whether it was the account's own limit (``limit_reached``)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

# A learned limit's window is read from a header only when the bucket is at least this much below
# full: the remaining count is a whole number, and a small gap would make the window's error large.
_WINDOW_READ_BELOW = 0.25
_MAX_WINDOW_S = 86_400.0
_GO_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|us|µs|ns|m|s)")
_GO_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def limit_reached(headers: Mapping[str, str], tokens: int) -> bool:
    """Whether a 429's ``x-ratelimit-*`` headers (names without the prefix) show the account's own
    limit spent for a request of ``tokens``: no request left, or fewer tokens than it costs. A 429
    whose headers show room (or that has none) is the provider's own trouble."""
    requests = header_number(headers.get("remaining-requests"))
    remaining_tokens = header_number(headers.get("remaining-tokens"))
    return (requests is not None and requests < 1) or (remaining_tokens is not None and remaining_tokens < tokens)


def header_number(value: str | None) -> float | None:
    """A header's value as a finite number, or None."""
    try:
        parsed = float(value) if value is not None else None
    except ValueError:
        return None
    return parsed if parsed is not None and math.isfinite(parsed) else None


def window_s(limit: float, remaining: float, reset: str | None) -> float | None:
    """How long the account takes to refill its whole limit, read from the reset (the time until
    the bucket is full again), or None when the header cannot say it precisely enough."""
    reset_s = parse_duration(reset)
    missing = limit - remaining
    if reset_s is None or reset_s <= 0 or missing < max(1.0, _WINDOW_READ_BELOW * limit):
        return None
    return min(_MAX_WINDOW_S, reset_s * limit / missing)


def parse_duration(text: str | None) -> float | None:
    """Seconds in a Go duration as OpenAI's reset headers write it ("6m0s", "1s", "20ms", "1h2m3.5s");
    None when it is not one."""
    if not text:
        return None
    text = text.strip()
    parts = _GO_DURATION.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        return None
    return sum(float(number) * _GO_UNITS[unit] for number, unit in parts)
