"""What a function's live channels did with the frames, as its Powertools metrics (docs/api.md#websocket,
README "Operating it"): the channel counts, this turns the counts into metrics once per invocation
or answer, so an operator can graph them and alarm on the posts that failed.

Only counts above zero are emitted: most invocations push nothing (a REST call without an open
socket, a deployment without the WebSocket API), and a metric of 0 on each would cost EMF bytes
and say nothing a missing datapoint does not.
"""

from __future__ import annotations

from aws_lambda_powertools.metrics import MetricUnit

from ..observability import metrics
from .channel import LiveChannel


def emit_push_counts(*channels: LiveChannel) -> None:
    """Add to the function's metrics what ``channels`` did since they were last asked. A gone
    connection is normal (a closed tab, a phone asleep: API Gateway answers 410 until $disconnect
    removes it); a failed post is not (``LivePostsFailed`` is the one to alarm on)."""
    taken = [channel.take_counts() for channel in channels]
    for name, value in (
        ("LiveFramesPosted", sum(counts.posted for counts in taken)),
        ("LiveConnectionsGone", sum(counts.gone for counts in taken)),
        ("LivePostsFailed", sum(counts.failed for counts in taken)),
        ("LiveFramesDropped", sum(counts.dropped for counts in taken)),
    ):
        if value:
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
