"""Words pushed to a user's open WebSocket connections while an answer is written
(docs/api.md#websocket): the frames (``frames``), the coalescer that keeps deltas to about ten a
second (``coalescer``), the channel that posts them off the caller's thread (``channel``) and the
metrics of what its posts met (``push_metrics``).

On the layer's floor with ``llm``: chat and interview push through a ``LiveChannel`` their
bootstrap passes in; the production channel's adapters (the connections table, the
``@connections`` endpoint) are storage's, wired in ``bootstrap.live``.
"""

from __future__ import annotations

from .channel import (
    ConnectionDirectory,
    ConnectionGone,
    FramePoster,
    LiveChannel,
    NoLiveChannel,
    PushCounts,
    SocketChannel,
)
from .coalescer import DeltaCoalescer, LiveAnswer
from .frames import (
    MAX_MESSAGE_BYTES,
    AcceptedFrame,
    DeltaFrame,
    DoneFrame,
    ErrorFrame,
    Frame,
    ProgressFrame,
    done_frame,
    encoded,
    error_frame,
)
from .push_metrics import emit_push_counts

__all__ = [
    "MAX_MESSAGE_BYTES",
    "AcceptedFrame",
    "ConnectionDirectory",
    "ConnectionGone",
    "DeltaCoalescer",
    "DeltaFrame",
    "DoneFrame",
    "ErrorFrame",
    "Frame",
    "FramePoster",
    "LiveAnswer",
    "LiveChannel",
    "NoLiveChannel",
    "ProgressFrame",
    "PushCounts",
    "SocketChannel",
    "done_frame",
    "emit_push_counts",
    "encoded",
    "error_frame",
]
