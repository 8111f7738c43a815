"""DynamoDB adapter of the WebSocket connections (``live.ConnectionDirectory``; docs/api.md#websocket).

ConnectionsTable: one item per open connection, ``connectionId`` (key), ``userId`` (the
UserConnectionsIndex: a user's connections, keys only), ``connectedAt`` and ``expiresAt`` (TTL:
API Gateway closes a connection after 2 hours, so an item whose ``$disconnect`` never came goes
by itself). ``$connect`` adds the item, ``$disconnect`` deletes it, and so does a push that finds
the connection gone (410).
"""

from __future__ import annotations

from boto3.dynamodb.conditions import Key

from .dynamodb import guarded, table

USER_INDEX = "UserConnectionsIndex"
MAX_CONNECTIONS_LISTED = 25  # a user's tabs and devices; more are pushed to once older ones close


class DynamoConnections:
    def __init__(self, table_name: str) -> None:
        self._table = table(table_name)

    def add(self, connection_id: str, user_id: str, connected_at: int, expires_at: int) -> None:
        item = {"connectionId": connection_id, "userId": user_id, "connectedAt": connected_at, "expiresAt": expires_at}
        guarded(lambda: self._table.put_item(Item=item))

    def remove(self, connection_id: str) -> None:
        guarded(lambda: self._table.delete_item(Key={"connectionId": connection_id}))

    def connections_of(self, user_id: str) -> list[str]:
        found = guarded(
            lambda: self._table.query(
                IndexName=USER_INDEX,
                KeyConditionExpression=Key("userId").eq(user_id),
                Limit=MAX_CONNECTIONS_LISTED,
            )
        )
        return [str(item["connectionId"]) for item in found.get("Items", [])]
