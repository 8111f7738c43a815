"""IANA time zones as the layer's pinned tzdata lists and defines them, the same on every machine.

The list and the rules come from the ``tzdata`` package (its ``zones`` file), never from the machine's
``/usr/share/zoneinfo``: ``zoneinfo.available_timezones()`` unions both, so a Debian host adds
``localtime`` (a symlink to the host's own zone) and a Lambda image adds or lacks others, and the
scheduler would then find a different set of due zones in each place. ``ZoneInfo(name)`` likewise
reads the machine's file first: tzdata 2025b on a Debian host and 2026.6 in the layer disagree on
``Africa/Casablanca`` in November 2026, so the same hour was due on one and not the other. Use
``zone(name)``, which reads the layer's tzdata. "America" (a directory),
"posix/Asia/Tokyo" or a path are not zones either, and asking ZoneInfo about them raises errors
other than "not found".
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

# Names a system zoneinfo directory holds that are not zones a user can live in.
_NOT_ZONES = frozenset({"localtime", "posixrules", "Factory"})


@cache
def known_timezones() -> frozenset[str]:
    """Read once per container from the tzdata package that ships with the layer."""
    try:
        listed = resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8").split()
    except (ModuleNotFoundError, FileNotFoundError):
        listed = list(available_timezones())
    return frozenset(listed) - _NOT_ZONES


def is_timezone(name: str) -> bool:
    return name in known_timezones()


@cache
def zone(name: str) -> ZoneInfo:
    """The zone as the layer's tzdata defines it; ``ZoneInfoNotFoundError`` (a ``KeyError``) if unknown.

    One instance per name, so datetimes in the same zone compare and subtract as same-zone times.
    """
    if not is_timezone(name):
        raise ZoneInfoNotFoundError(f"No time zone found with key {name}")
    try:
        data = resources.files("tzdata.zoneinfo").joinpath(*name.split("/"))
        with data.open("rb") as rules:
            return ZoneInfo.from_file(rules, key=name)
    except (ModuleNotFoundError, FileNotFoundError):
        return ZoneInfo(name)
