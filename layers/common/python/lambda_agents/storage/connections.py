"""DynamoDB adapter of the WebSocket connections (``live.ConnectionDirectory``; docs/api.md#websocket).

ConnectionsTable: one item per open connection, ``connectionId`` (key), ``userId`` (the
UserConnectionsIndex: a user's connections, keys only), ``connectedAt`` and ``expiresAt`` (TTL:
API Gateway closes a connection after 2 hours, so an item whose ``$disconnect`` never came goes
by itself). ``$connect`` adds the item, ``$disconnect`` deletes it, and so does a push that finds
the connection gone (410), unless the connection is younger than ``HANDSHAKE_GRACE_S``: API Gateway
answers 410 to a post for a connection whose ``$connect`` has not returned yet, and deleting its item
then would leave that open connection unlisted for its whole life.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from boto3.dynamodb.conditions import Attr, Key

from .dynamodb import ConditionFailed, guarded, table

USER_INDEX = "UserConnectionsIndex"
MAX_CONNECTIONS_LISTED = 25  # a user's tabs and devices; more are pushed to once older ones close
HANDSHAKE_GRACE_S = 30  # $connect's integration ends at 29 s: an older connection's 410 means it is closed


class DynamoConnections:
    def __init__(self, table_name: str, clock: Callable[[], float] = time.time) -> None:
        self._table = table(table_name)
        self._clock = clock

    def add(self, connection_id: str, user_id: str, connected_at: int, expires_at: int) -> None:
        item = {"connectionId": connection_id, "userId": user_id, "connectedAt": connected_at, "expiresAt": expires_at}
        guarded(lambda: self._table.put_item(Item=item))

    def remove(self, connection_id: str) -> None:
        guarded(lambda: self._table.delete_item(Key={"connectionId": connection_id}))

    def remove_gone(self, connection_id: str) -> bool:
        """Delete a connection a push found gone; False (kept) when it connected less than
        ``HANDSHAKE_GRACE_S`` ago, as its ``$connect`` may still be running (module docstring)."""
        cutoff = int(self._clock()) - HANDSHAKE_GRACE_S
        try:
            guarded(
                lambda: self._table.delete_item(
                    Key={"connectionId": connection_id},
                    ConditionExpression=Attr("connectedAt").not_exists() | Attr("connectedAt").lte(cutoff),
                )
            )
        except ConditionFailed:
            return False
        return True

    def connections_of(self, user_id: str) -> list[str]:
        found = guarded(
            lambda: self._table.query(
                IndexName=USER_INDEX,
                KeyConditionExpression=Key("userId").eq(user_id),
                Limit=MAX_CONNECTIONS_LISTED,
            )
        )
        return [str(item["connectionId"]) for item in found.get("Items", [])]
