"""How long an API request may work: API Gateway (REST) ends every request 29 s after it
received it, whatever the Lambda's own timeout, and answers 504 to the client.

A request's deadline is the earlier of its own budget (``requestContext.requestTimeEpoch`` + 29 s,
so time lost before the handler runs, a cold start included, is counted) and the Lambda's
remaining time, each less a margin kept to store what was done and answer. Work that would pass
it is cut to what fits (the engine raises ``DeadlineReached`` while there is still time to
answer), so nothing commits after the client was told 504.

API Gateway never hands a Lambda a request it has already given up on, so a request time older
than the 29 s is an event replayed from a file (``sam local invoke``, ``make invoke``, a sample
event): only the Lambda's time counts for it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..llm.policy import Deadline

API_GATEWAY_TIMEOUT_S = 29.0
ANSWER_MARGIN_S = 3.0


def request_received_at(event: Mapping[str, Any] | None) -> float | None:
    """When API Gateway received the request (epoch seconds), or None for another kind of event."""
    context = event.get("requestContext") if isinstance(event, Mapping) else None
    epoch_ms = context.get("requestTimeEpoch") if isinstance(context, Mapping) else None
    if isinstance(epoch_ms, bool) or not isinstance(epoch_ms, (int, float)):
        return None
    if not math.isfinite(epoch_ms) or epoch_ms <= 0:
        return None
    return float(epoch_ms) / 1000.0


def request_deadline(
    event: Mapping[str, Any] | None,
    context: Any,
    *,
    margin_s: float = ANSWER_MARGIN_S,
    wall_clock: Callable[[], float] = time.time,
    clock: Callable[[], float] = time.monotonic,
) -> Deadline | None:
    """The deadline of one API request; None without a request time or a Lambda context (a plain local call)."""
    budgets: list[float] = []
    received_at = request_received_at(event)
    if received_at is not None:
        left = received_at + API_GATEWAY_TIMEOUT_S - wall_clock()
        if left > 0:
            # A clock running behind API Gateway's cannot grant more than the whole budget.
            budgets.append(min(API_GATEWAY_TIMEOUT_S, left))
    get_remaining = getattr(context, "get_remaining_time_in_millis", None)
    if callable(get_remaining):
        budgets.append(get_remaining() / 1000.0)
    if not budgets:
        return None
    return Deadline.after(max(0.0, min(budgets) - margin_s), clock)
