"""Which users are due for generation this hour (docs/nudges.md#scheduled-generation: an hourly EventBridge
schedule; each user's generation runs once for their local date).

A timezone is due when its local hour equals the configured generation hour; the users of a
due timezone are queued for that timezone's local date. Queuing a user twice (a catch-up
window, a retried scheduler run) is harmless: the generator is idempotent per user and date.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

from ..timezones import known_timezones, zone


@dataclass(frozen=True)
class DueZone:
    timezone: str
    local_date: str


def due_zones(
    now_utc: datetime,
    generation_hour: int,
    window_hours: int = 1,
    zones: Iterable[str] | None = None,
) -> Iterator[DueZone]:
    """Timezones whose local time is in ``[generation_hour, generation_hour + window_hours)``."""
    if now_utc.tzinfo is None:
        raise ValueError("now_utc must be timezone-aware")
    for name in sorted(zones if zones is not None else known_timezones()):
        try:
            local = now_utc.astimezone(zone(name))
        except (KeyError, ValueError):
            continue
        if (local.hour - generation_hour) % 24 < window_hours:
            yield DueZone(name, local.date().isoformat())
