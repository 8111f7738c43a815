"""The generator's duplicate-delivery records (Powertools idempotency on NudgeIdempotencyTable),
defined once for the generator that writes them and the deletion that removes them.

A record is keyed by ``[userId, localDate]`` under a fixed prefix. Without the prefix Powertools
names a record after the Lambda function that wrote it (``<function name>.<module>.<qualname>``),
which another function cannot know; with it, the id is ``nudge-generation#<hash>`` wherever it is
computed, and ``storage.generation_records`` computes it through Powertools' own persistence
layer, so no copy of its hashing can drift.

Only outcomes that stored a schedule are kept (``KEPT_STATUSES``): each then sits next to a
schedule of the same date, which is how a deletion finds it. A skip stored nothing and is cheap to
decide again (one read of the profile), so keeping it would only leave the user's id behind, for a
date nothing else names: a job for a user who has just deleted their data is such a skip.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig

KEY_PREFIX = "nudge-generation"
KEY_FIELDS = "[userId, localDate]"
EXPIRES_AFTER_S = 2 * 24 * 3600  # longer than the queue's redelivery horizon
KEPT_STATUSES = frozenset({"generated", "already_generated"})


class OutcomeNotKept(Exception):
    """Carries an outcome out of the idempotent function, so that Powertools deletes its record."""

    def __init__(self, outcome: dict[str, Any]) -> None:
        super().__init__(f"outcome {outcome.get('status')!r} not kept")
        self.outcome = outcome


def kept_or_raise(outcome: dict[str, Any]) -> dict[str, Any]:
    """The outcome, when it is one to keep; else it leaves inside ``OutcomeNotKept``."""
    if outcome.get("status") not in KEPT_STATUSES:
        raise OutcomeNotKept(outcome)
    return outcome


def outcome_not_kept(error: BaseException) -> dict[str, Any] | None:
    """The outcome an ``OutcomeNotKept`` carried, found along ``error``'s chain: Powertools raises
    its own error when it cannot delete the record, with ours two links back."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, OutcomeNotKept):
            return seen.outcome
        seen = seen.__context__
    return None


def idempotency_config() -> IdempotencyConfig:
    """Imported on use: the API function needs it only when a user deletes their data."""
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig

    return IdempotencyConfig(
        event_key_jmespath=KEY_FIELDS,
        expires_after_seconds=EXPIRES_AFTER_S,
        raise_on_no_idempotency_key=True,
    )
