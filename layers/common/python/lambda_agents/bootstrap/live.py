"""The LiveChannel every function that writes a user's answers pushes its frames through."""

from __future__ import annotations

from ..config import SocketSettings, load_settings
from ..live import LiveChannel, NoLiveChannel, SocketChannel
from ..storage.connections import DynamoConnections
from ..storage.socket_poster import SocketPoster


def live_channel(settings: SocketSettings | None = None) -> LiveChannel:
    """The connections table and ``@connections`` endpoint the environment names, else no channel."""
    settings = settings or load_settings(SocketSettings)
    if settings.connections_table is None or settings.endpoint is None:
        return NoLiveChannel()
    return SocketChannel(DynamoConnections(settings.connections_table), SocketPoster(settings.endpoint))
