"""API Gateway's ``@connections`` API (``live.FramePoster``): a frame posted to one WebSocket
connection through the ``apigatewaymanagementapi`` client, at the stage's endpoint
(``SOCKET_API_ENDPOINT``, ``config.SocketSettings``). A closed connection answers 410
``GoneException``: ``ConnectionGone``. Timeouts are short and retries few: a push that cannot be
made in seconds is not worth holding the function for, the answer is stored either way.
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from ..live.channel import ConnectionGone

_CONFIG = Config(connect_timeout=2, read_timeout=5, retries={"mode": "standard", "max_attempts": 2})


class SocketPoster:
    def __init__(self, endpoint: str) -> None:
        self._client: Any = boto3.client("apigatewaymanagementapi", endpoint_url=endpoint, config=_CONFIG)

    def post(self, connection_id: str, data: bytes) -> None:
        try:
            self._client.post_to_connection(ConnectionId=connection_id, Data=data)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "GoneException":
                raise ConnectionGone(connection_id) from None
            raise
