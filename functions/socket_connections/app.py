"""SocketConnectionFunction: the WebSocket API's ``$connect`` and ``$disconnect`` routes
(docs/api.md#websocket).

``$connect`` runs only after the authorizer let the user in: it records the connection under the
user (``storage.connections``), with a TTL at API Gateway's 2-hour limit, so that an answer written
for the user reaches it. ``$disconnect`` deletes it (API Gateway sends it on a best-effort basis; a
push that finds the connection gone deletes it too, and the TTL ends what is left).

Environment: CONNECTIONS_TABLE.
"""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from lambda_agents.api.identity import socket_caller
from lambda_agents.composition import CompositionRoot
from lambda_agents.config import load_settings
from lambda_agents.observability import logger
from lambda_agents.storage.connections import DynamoConnections
from pydantic import BaseModel, ConfigDict, Field

CONNECTION_LIMIT_S = 2 * 3600  # API Gateway closes a WebSocket connection after 2 hours


class ConnectionSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    connections_table: str = Field(alias="CONNECTIONS_TABLE", min_length=1)


def bootstrap(*, settings: ConnectionSettings | None = None) -> DynamoConnections:
    """The function's composition root (``lambda_agents.composition``): its one port, the connections."""
    return DynamoConnections((settings or load_settings(ConnectionSettings)).connections_table)


dependencies = CompositionRoot(bootstrap)


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = event["requestContext"]
    connection_id = str(request["connectionId"])
    if request["eventType"] == "CONNECT":
        user_id = socket_caller(event).user_id
        connected_s = int(request.get("connectedAt", time.time() * 1000)) // 1000
        dependencies().add(connection_id, user_id, connected_s, connected_s + CONNECTION_LIMIT_S)
        logger.info("socket connected", extra={"connection_id": connection_id})
    elif request["eventType"] == "DISCONNECT":
        dependencies().remove(connection_id)
        logger.info("socket disconnected", extra={"connection_id": connection_id})
    return {"statusCode": 200}
