"""IANA time zones as tzdata lists them: the one check every system uses for a zone name.

Only the list is consulted, never the file system: "America" (a directory), "posix/Asia/Tokyo"
or a path are not zones, and asking ZoneInfo about them raises errors other than "not found".
"""

from __future__ import annotations

from functools import cache
from zoneinfo import available_timezones


@cache
def known_timezones() -> frozenset[str]:
    """Read once per container (tzdata ships with the layer)."""
    return frozenset(available_timezones())


def is_timezone(name: str) -> bool:
    return name in known_timezones()
