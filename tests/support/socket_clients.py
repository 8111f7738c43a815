"""The WebSocket API under the local runner, through the real ``websockets`` client: the served
runner, a local user's connection, the REST calls that go with it, and ID tokens signed by a key the
test makes (its JWKS served from 127.0.0.1), for the ``$connect`` authorizer."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from websockets.sync.client import ClientConnection, connect

from devtools.runner import LocalRunner, QueuePoller, serving

POOL = "us-east-1_LocalPool"
CLIENT = "localclient"
ISSUER = f"https://cognito-idp.us-east-1.amazonaws.com/{POOL}"


class Keys:
    """An RSA key pair of the test's own, its public half served as a pool's JWKS."""

    def __init__(self) -> None:
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.private.public_key()))
        self.jwks = json.dumps({"keys": [{**public, "kid": "test-key", "alg": "RS256", "use": "sig"}]}).encode()

    def token(self, **claims: Any) -> str:
        body = {"sub": "carol", "aud": CLIENT, "iss": ISSUER, "token_use": "id", "exp": 4_000_000_000, **claims}
        return jwt.encode(body, self.private, algorithm="RS256", headers={"kid": "test-key"})

    def served(self) -> AbstractContextManager[str]:
        return served_jwks(lambda: self.jwks)


@contextmanager
def served_jwks(jwks: Callable[[], bytes]) -> Iterator[str]:
    """A pool's JWKS served from 127.0.0.1 (``jwks()`` at each read): its URL."""

    class Jwks(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = jwks()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Jwks)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/.well-known/jwks.json"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def served_runner(**environ: str) -> Iterator[tuple[LocalRunner, str]]:
    """The template under the runner with the offline model, served; moto's state reset afterwards."""
    with LocalRunner(environ={"AWS_DEFAULT_REGION": "us-east-1", "AI_AGENT_MODE": "mock", **environ}) as runner:
        try:
            with serving(runner) as url:
                yield runner, url
        finally:
            runner.aws.reset()


@contextmanager
def served_on_fake_openai(environ: dict[str, str], *, poll_s: float | None = None) -> Iterator[tuple[LocalRunner, str]]:
    """``served_runner`` with the functions on a fake OpenAI server (``environ`` names it and its key),
    the key in the shell's environment as a developer's (and ``sam local``'s) is; ``poll_s``: the
    workers take their messages every ``poll_s`` as Lambda's pollers do (None: a test delivers them)."""
    environ = dict(environ)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", environ.pop("OPENAI_API_KEY"))
        with served_runner(**environ) as (runner, url):
            poller = None if poll_s is None else QueuePoller(runner, poll_s)
            if poller is not None:
                poller.start()
            try:
                yield runner, url
            finally:
                if poller is not None:
                    poller.stop()


def budget_counted(runner: LocalRunner, user: str) -> int:
    """The tokens ``user``'s budget counts in its window (every slot of their spending item)."""
    items = runner.aws.client("dynamodb").scan(TableName="UserSpendingTable")["Items"]
    mine = [item for item in items if item["userId"]["S"] == user]
    return sum(int(tokens["N"]) for item in mine for tokens in item["slots"]["M"].values())


def socket(url: str, user: str | None = None, **headers: str) -> ClientConnection:
    where = url.replace("http://", "ws://") + "/v1" + (f"?localUser={user}" if user else "")
    return connect(where, additional_headers=headers, open_timeout=60)


def frame(ws: ClientConnection) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(ws.recv(timeout=60))
    return found


def until_done(ws: ClientConnection) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """An answer's frames as a client reads them: its deltas (and progress), then its ``done``."""
    before: list[dict[str, Any]] = []
    for _ in range(10_000):
        found = frame(ws)
        if found["type"] == "done":
            return before, found
        before.append(found)
    raise AssertionError("no done after 10,000 frames")


def joined(frames: list[dict[str, Any]]) -> str:
    """The words as a client has them: each delta applied at its offset."""
    text = ""
    for found in frames:
        if found["type"] == "delta":
            text = text[: found["offset"]] + found["text"]
    return text


def rest(url: str, method: str, path: str, user: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"X-Local-User": user, **({"Content-Type": "application/json"} if data else {})}
    request = urllib.request.Request(f"{url}/v1{path}", data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def sent(ws: ClientConnection, session: str, text: str, client_message_id: str) -> dict[str, Any]:
    """A chat message sent by ``ws``, and the first frame back (its ``accepted``, or its ``error``)."""
    ws.send(chat_message(session, text, client_message_id))
    return frame(ws)


def chat_message(session: str, text: str, client_message_id: str) -> str:
    body = {"action": "sendMessage", "to": "chat", "sessionId": session, "message": text}
    return json.dumps({**body, "clientMessageId": client_message_id}, ensure_ascii=False)
