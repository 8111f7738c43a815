"""SocketAuthorizerFunction: the WebSocket API's ``$connect`` Lambda REQUEST authorizer
(docs/api.md#websocket; ``lambda_agents.api.id_tokens``).

No token: ``Unauthorized`` (API Gateway answers 401, the upgrade never happens). A token that is not
a valid ID token of this pool and app client: a Deny policy (403). A valid one: Allow, the user's
``sub`` as ``principalId``, which API Gateway hands to every later route of the connection
(``requestContext.authorizer``): a message names no user. No claim the user may rewrite (their
``zoneinfo``) goes along: nothing the product decides reads one.

Environment: USER_POOL_ID, USER_POOL_CLIENT_ID (the REST routes' pool and client).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from lambda_agents.api.id_tokens import IdTokens, IdTokenSettings, TokenRefused, token_of
from lambda_agents.composition import CompositionRoot
from lambda_agents.config import load_settings
from lambda_agents.observability import logger


@dataclass(frozen=True)
class Dependencies:
    tokens: IdTokens


def bootstrap(*, settings: IdTokenSettings | None = None) -> Dependencies:
    """The function's composition root (``lambda_agents.composition``): the pool's keys are read on
    the first token and kept for the container's life."""
    return Dependencies(IdTokens(settings or load_settings(IdTokenSettings)))


dependencies = CompositionRoot(bootstrap)


def _policy(principal: str, effect: str, resource: str) -> dict[str, Any]:
    statement = {"Action": "execute-api:Invoke", "Effect": effect, "Resource": resource}
    return {"principalId": principal, "policyDocument": {"Version": "2012-10-17", "Statement": [statement]}}


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    token = token_of(event)
    if token is None:
        raise Exception("Unauthorized")
    try:
        claims = dependencies().tokens.verify(token)
    except TokenRefused as refused:
        logger.info("connection refused", extra={"reason": str(refused)})
        return _policy("anonymous", "Deny", event["methodArn"])
    return _policy(claims.user_id, "Allow", event["methodArn"])
