"""Who is calling, from the API Gateway request context only.

Deployed, API Gateway fills the context: Cognito claims (``authorizer.claims.sub``) on user
routes, the IAM caller (``identity.userArn``) on admin routes. Handlers never read a header
for identity, so nothing a client sends can impersonate a user; the local runner builds the
same context itself (see devtools/runner.py), which exists only outside AWS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import Unauthorized


def caller_user_id(event: dict[str, Any]) -> str:
    context = event.get("requestContext") or {}
    claims = ((context.get("authorizer") or {}).get("claims")) or {}
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise Unauthorized("authentication required: no user identity on the request")
    return subject


def caller_admin_arn(event: dict[str, Any]) -> str:
    identity = (event.get("requestContext") or {}).get("identity") or {}
    arn = identity.get("userArn")
    if not isinstance(arn, str) or not arn:
        raise Unauthorized("admin route: the request is not IAM-signed")
    return arn


@dataclass(frozen=True)
class SocketCaller:
    user_id: str


def socket_caller(event: dict[str, Any]) -> SocketCaller:
    """The user of a WebSocket connection: who the ``$connect`` authorizer let in, which API Gateway
    hands to every route of the connection (``requestContext.authorizer``)."""
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    user_id = authorizer.get("principalId")
    if not isinstance(user_id, str) or not user_id:
        raise Unauthorized("authentication required: the connection has no user")
    return SocketCaller(user_id)
