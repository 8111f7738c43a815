"""The real clock: the default of every service's ``clock`` port (tests pass their own)."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    return datetime.now(UTC)
