"""Cognito ID tokens checked by the WebSocket API's ``$connect`` authorizer (docs/api.md#websocket).

A browser cannot set a header on a WebSocket upgrade, so the token comes in the query string
(``?idToken=``), or in the ``Authorization`` header from clients that can. It is the user pool's
ID token, checked as API Gateway's Cognito authorizer checks one on the REST routes: its RS256
signature against the pool's published keys (JWKS, fetched once and kept across invocations), its
issuer (the pool), audience (the app client), expiry, and ``token_use`` = ``id`` (an access token
of the same pool is refused).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jwt
from pydantic import BaseModel, ConfigDict, Field

JWKS_PATH = "/.well-known/jwks.json"


class IdTokenSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    # us-east-1_AbC123 in AWS; locally the template's logical id (UserPool), whose tokens no one has.
    user_pool_id: str = Field(alias="USER_POOL_ID", pattern=r"^[A-Za-z0-9_-]{1,55}$")
    client_id: str = Field(alias="USER_POOL_CLIENT_ID", pattern=r"^[A-Za-z0-9_-]{1,128}$")
    region: str = Field(default="us-east-1", alias="AWS_REGION", pattern=r"^[a-z0-9-]{1,32}$")
    # The pool's JWKS elsewhere: this machine's only (a test's keys); unset in AWS.
    jwks_url: str | None = Field(default=None, alias="COGNITO_JWKS_URL", pattern=r"^http://127\.0\.0\.1:[0-9]+/")

    @property
    def issuer(self) -> str:
        """The pool's issuer; a pool id starts with its region (``us-east-1_...``)."""
        region = self.user_pool_id.split("_", 1)[0] if "_" in self.user_pool_id else self.region
        return f"https://cognito-idp.{region}.amazonaws.com/{self.user_pool_id}"


class TokenRefused(Exception):
    """Not a valid ID token of this pool and client: the connection is refused (403)."""


@dataclass(frozen=True)
class IdTokenClaims:
    user_id: str  # sub


class IdTokens:
    def __init__(self, settings: IdTokenSettings) -> None:
        self._settings = settings
        self._keys = jwt.PyJWKClient(settings.jwks_url or settings.issuer + JWKS_PATH, lifespan=3600, timeout=5)

    def verify(self, token: str) -> IdTokenClaims:
        try:
            key = self._keys.get_signing_key_from_jwt(token)
        except jwt.PyJWKClientConnectionError:
            raise  # the keys cannot be read: the authorizer fails (500), the client tries again
        except (jwt.PyJWKClientError, jwt.InvalidTokenError) as error:
            raise TokenRefused(type(error).__name__) from None
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=["RS256"],
                audience=self._settings.client_id,
                issuer=self._settings.issuer,
                options={"require": ["exp", "iss", "aud", "sub", "token_use"]},
            )
        except jwt.InvalidTokenError as error:
            raise TokenRefused(type(error).__name__) from None
        if claims.get("token_use") != "id":
            raise TokenRefused("not an ID token")
        return IdTokenClaims(str(claims["sub"]))


def token_of(event: dict[str, Any]) -> str | None:
    """The token of a ``$connect`` request: ``?idToken=``, else ``Authorization`` (``Bearer`` or bare)."""
    query = event.get("queryStringParameters") or {}
    if isinstance(query.get("idToken"), str) and query["idToken"]:
        return str(query["idToken"])
    for name, value in (event.get("headers") or {}).items():
        if name.lower() == "authorization" and isinstance(value, str) and value.strip():
            scheme, _, rest = value.strip().partition(" ")
            return rest.strip() if scheme.lower() == "bearer" and rest else value.strip()
    return None
