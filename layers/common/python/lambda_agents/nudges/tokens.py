"""max_tokens for the Commander call (docs/nudges.md#the-token-budget-ramp).

``(500 base + 150 per nudge + 400 for the 2 + 2 posts) * (1.3 + 0.2 * attempt)``, rounded up,
is the budget of each attempt. Two things can only raise it (the engine's rules): after
``finish_reason=length`` the next attempt asks for what the partial answer still needs plus a
margin, which is always more than the attempt before (a truncated answer is retried with more), or
stops when that is above the ceiling; and a slot count whose answers needed more than the
estimate in this container starts there (each slot count is its own output type).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

BASE_TOKENS = 500
TOKENS_PER_NUDGE = 150
POSTS_TOKENS = 400
DEFAULT_CEILING = 16_384
# What the generator's timeout is sized for (template.yaml, NudgeGeneratorFunction: 300 s): a slow
# hour's 20 tokens/s after a reasoning model's 30 s first token.
SLOW_TOKENS_PER_S = 20.0
SLOW_FIRST_TOKEN_S = 30.0
GENERATOR_TIMEOUT_S = 300.0
# A plan's input as the provider counts it on arrival: the Commander's messages for 15 slots with
# three recent days, and the strict schema sent with them (``devtools.fanout_plan.plan_prompt_tokens``
# measures it; a test keeps this at or above the measure). The scheduler plans the fan-out with it.
PLAN_PROMPT_TOKENS = 1_500


def estimate_max_tokens(slot_count: int, attempt: int = 0) -> int:
    if slot_count < 0 or attempt < 0:
        raise ValueError("slot_count and attempt must not be negative")
    buffer = 1.3 + attempt * 0.2
    # round() first: 1.3 + 0.2 is 1.5000000000000002 in binary, which would add a token.
    return math.ceil(round((BASE_TOKENS + slot_count * TOKENS_PER_NUDGE + POSTS_TOKENS) * buffer, 6))


def most_slots_within(
    seconds: float, *, tokens_per_s: float = SLOW_TOKENS_PER_S, first_token_s: float = SLOW_FIRST_TOKEN_S
) -> int:
    """The most slots whose plan's first attempt ends within ``seconds`` at that pace: a day of more
    could not be made by the model in one invocation at a slow hour, and would end, after every
    delivery ran out of time, in the rule-based fallback."""
    slots = 0
    while first_token_s + estimate_max_tokens(slots + 1) / tokens_per_s <= seconds:
        slots += 1
    return slots


# The most nudges in a day (NUDGE_MAX_SLOTS's bound, template.yaml's NudgeMaxSlots' MaxValue): 21.
MAX_SLOTS = most_slots_within(GENERATOR_TIMEOUT_S)


@dataclass(frozen=True)
class CommanderTokenPolicy:
    """The engine's token policy for one slot count (capped at the model's output limit)."""

    slot_count: int
    ceiling: int = DEFAULT_CEILING

    def max_tokens(self, attempt: int) -> int:
        return min(self.ceiling, estimate_max_tokens(self.slot_count, attempt))
