"""Words pushed to a user's open WebSocket connections while an answer is written
(docs/api.md#websocket): the frames (``frames``), the coalescer that keeps deltas to about ten a
second (``coalescer``) and the channel that posts them off the caller's thread (``channel``).

On the layer's floor with ``llm``: chat and interview push through a ``LiveChannel`` their
bootstrap passes in; the production channel's adapters (the connections table, the
``@connections`` endpoint) are storage's, wired in ``bootstrap.live``.
"""

from __future__ import annotations

from .channel import ConnectionDirectory, ConnectionGone, FramePoster, LiveChannel, NoLiveChannel, SocketChannel
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
    "SocketChannel",
    "done_frame",
    "encoded",
    "error_frame",
]
