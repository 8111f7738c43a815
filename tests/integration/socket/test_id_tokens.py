"""The ``$connect`` authorizer's check of a Cognito ID token (``api.id_tokens``; docs/api.md#websocket):
the pool's keys read once and kept for the container's life, a key the pool published since read
again (a rotation), and refused what API Gateway's Cognito authorizer refuses. The pool's JWKS is
served from 127.0.0.1; the key client's clock is moved by hand."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from lambda_agents.api.id_tokens import IdTokens, IdTokenSettings, TokenRefused

from tests.support.socket_clients import CLIENT, ISSUER, POOL, served_jwks


class Pool:
    """A user pool's signing keys, the ones it publishes served as its JWKS (fetches counted)."""

    def __init__(self) -> None:
        self.private: dict[str, Any] = {}
        self.published: list[str] = []
        self.fetches = 0

    def publish(self, kid: str) -> None:
        self.private[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.published.append(kid)

    def jwks(self) -> bytes:
        keys = []
        for kid in self.published:
            public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.private[kid].public_key()))
            keys.append({**public, "kid": kid, "alg": "RS256", "use": "sig"})
        return json.dumps({"keys": keys}).encode()

    def token(self, kid: str, **claims: Any) -> str:
        body = {"sub": "carol", "aud": CLIENT, "iss": ISSUER, "token_use": "id", "exp": 4_000_000_000, **claims}
        return jwt.encode(body, self.private[kid], algorithm="RS256", headers={"kid": kid})

    def jwks_read(self) -> bytes:
        self.fetches += 1
        return self.jwks()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The key client's monotonic clock (its JWKS lifespan, its refresh cooldown), moved by hand."""
    now = [1000.0]
    fake = SimpleNamespace(monotonic=lambda: now[0])
    for module in ("jwt.jwks_client", "jwt.api_jwk", "jwt.jwk_set_cache"):
        monkeypatch.setattr(f"{module}.time", fake)
    return now


@pytest.fixture
def pool() -> Pool:
    pool = Pool()
    pool.publish("k1")
    return pool


def tokens_of(url: str) -> IdTokens:
    return IdTokens(
        IdTokenSettings.model_validate({"USER_POOL_ID": POOL, "USER_POOL_CLIENT_ID": CLIENT, "COGNITO_JWKS_URL": url})
    )


def test_the_pools_keys_are_read_once_for_every_token_the_container_checks(pool: Pool, clock: list[float]) -> None:
    with served_jwks(pool.jwks_read) as url:
        tokens = tokens_of(url)
        users = []
        for user in ("alice", "bob", "carol"):
            users.append(tokens.verify(pool.token("k1", sub=user)).user_id)
            clock[0] += 600  # invocations ten minutes apart, within the keys' hour
    assert users == ["alice", "bob", "carol"] and pool.fetches == 1


def test_a_key_the_pool_published_since_is_read_again_and_an_unknown_one_cannot_make_it_read_each_time(
    pool: Pool, clock: list[float]
) -> None:
    with served_jwks(pool.jwks_read) as url:
        tokens = tokens_of(url)
        tokens.verify(pool.token("k1"))
        pool.publish("k2")  # the pool's keys rotate
        clock[0] += 60
        assert tokens.verify(pool.token("k2", sub="dave")).user_id == "dave"
        assert pool.fetches == 2
        forged = jwt.encode({"sub": "x"}, rsa.generate_private_key(65537, 2048), "RS256", headers={"kid": "k9"})
        for _ in range(3):
            with pytest.raises(TokenRefused):
                tokens.verify(forged)
        assert pool.fetches == 2  # a refresh has just run: unknown keys are refused without another


@pytest.mark.parametrize(
    "claims",
    [
        {"token_use": "access"},  # the pool's access token
        {"aud": "another-client"},
        {"iss": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Other"},
        {"exp": 1_000_000_000},
    ],
    ids=["access-token", "another-client", "another-pool", "expired"],
)
def test_a_token_cognitos_own_check_refuses_is_refused(pool: Pool, clock: list[float], claims: dict[str, Any]) -> None:
    with served_jwks(pool.jwks_read) as url, pytest.raises(TokenRefused):
        tokens_of(url).verify(pool.token("k1", **claims))
