"""Which day a user's tokens count to: the user's local day, from the identity's OIDC ``zoneinfo``
claim when it names a zone of the layer's tzdata (``timezones.is_timezone``), else UTC's.

The budget resets at the user's local midnight, so the refusal's Retry-After is the seconds until
then; across a DST change the day is 23 or 25 hours long, which the zone's rules give.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from ..timezones import is_timezone, zone

# A day's counter is kept a little past the day: the worker of a turn accepted just before
# midnight still settles to it, and nothing reads it after.
KEEP_AFTER_DAY = timedelta(days=2)


@dataclass(frozen=True)
class SpendingDay:
    """The user's local day at ``now``: its date, the zone it was read in and the UTC moment it ends."""

    day: date
    time_zone: str
    ends_at: datetime

    def seconds_left(self, now: datetime) -> int:
        """Whole seconds until the day ends, at least 1 (a Retry-After never says 0)."""
        return max(1, math.ceil((self.ends_at - now).total_seconds()))

    @property
    def expires_at(self) -> int:
        """The counter's TTL (epoch seconds): ``KEEP_AFTER_DAY`` after the day ends."""
        return int((self.ends_at + KEEP_AFTER_DAY).timestamp())


def user_time_zone(claim: Any) -> str:
    """The zone a ``zoneinfo`` claim names, or "UTC" for an absent, mistyped or unknown one."""
    if isinstance(claim, str) and is_timezone(claim):
        return claim
    return "UTC"


def spending_day(now: datetime, time_zone: str | None) -> SpendingDay:
    """The local day of ``now`` (an aware datetime) in ``time_zone`` (UTC when unknown), and when it ends."""
    if now.tzinfo is None:
        raise ValueError("spending_day needs an aware datetime")
    name = user_time_zone(time_zone)
    tz = UTC if name == "UTC" else zone(name)
    local = now.astimezone(tz)
    next_day = local.date() + timedelta(days=1)
    # Midnight of the next local day; fold=0 picks the first of an ambiguous hour, and a midnight a
    # DST jump skips is normalised forward by the round trip through UTC.
    ends_local = datetime.combine(next_day, time(0), tzinfo=tz)
    ends_at = ends_local.astimezone(UTC)
    return SpendingDay(day=local.date(), time_zone=name, ends_at=ends_at)
