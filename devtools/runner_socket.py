"""The template's WebSocket API under `make serve`, as strict as API Gateway (docs/local.md).

``ws://127.0.0.1:<port>/v1`` on the runner's own port: the HTTP server hands an upgrade request
here, and the handshake and frames are the ``websockets`` library's (its sans-I/O protocol for the
handshake, then its sync connection on the same socket). What API Gateway does, done here:

- ``$connect``: the caller is ``X-Local-User`` on the upgrade or ``?localUser=`` (a browser cannot
  set a header), as the REST routes' local identity; otherwise the template's authorizer function
  runs on API Gateway's REQUEST event (``Unauthorized`` 401, Deny 403, before the upgrade), then
  the ``$connect`` route's function (a non-2xx answer refuses the connection).
- Messages go to the route ``$request.body.action`` names (else ``$default``; else API Gateway's
  ``Forbidden``), as API Gateway's events (eventType, routeKey, connectionId, domainName, stage,
  the authorizer's context); a two-way route's answer goes back on the connection.
- Limits: 128 KB a message and 32 KB a frame from the client (close 1009), 128 KB a message posted
  (413), longer messages sent in frames of 32 KB; a connection idle 10 minutes or open 2 hours is
  closed (1001), each on ``time_scale`` (the runner's PRODUCT_TIME_SCALE) so tests need not wait;
  ``$disconnect`` runs whoever closes.
- ``@connections``: ``POST|GET|DELETE /v1/@connections/{id}``, SigV4-signed for execute-api in the
  runner's region as boto3's ``apigatewaymanagementapi`` signs it (403 otherwise), 410 ``GoneException`` for a
  connection that is gone.

The runner's page to watch an answer arrive (``/_local/live``, never deployed) is served from here.
"""

from __future__ import annotations

import json
import re
import secrets
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request
from websockets.protocol import State
from websockets.server import ServerProtocol
from websockets.sync.connection import Connection as SyncConnection

from .runner_api import HttpRequest, HttpResponse, json_response
from .runner_lambda import FunctionFailed, InvocationError
from .template import resources_of_type

MESSAGE_BYTES = 128 * 1024
FRAME_BYTES = 32 * 1024
IDLE_S = 10 * 60
CONNECTION_S = 2 * 3600
PAGE_PATH = "/_local/live"
PAGE = Path(__file__).with_name("live_page.html")
_FUNCTION_ARN = re.compile(r"\$\{([A-Za-z0-9]+)\.Arn\}")


@dataclass(frozen=True)
class SocketRoutes:
    """The template's WebSocket API: its stage, each route's function, the two-way routes, the authorizer."""

    stage: str
    functions: dict[str, str]
    two_way: frozenset[str]
    authorizer: str | None


def socket_routes(template: dict[str, Any]) -> SocketRoutes | None:
    def of_type(kind: str) -> dict[str, dict[str, Any]]:
        return {name: body.get("Properties", {}) for name, body in resources_of_type(kind, template).items()}

    def function_of(properties: dict[str, Any], key: str) -> str:
        found = _FUNCTION_ARN.search(json.dumps(properties.get(key)))
        assert found, f"{key} names no function's Arn"
        return found.group(1)

    apis = [
        name for name, props in of_type("AWS::ApiGatewayV2::Api").items() if props.get("ProtocolType") == "WEBSOCKET"
    ]
    if not apis:
        return None
    integrations = {
        name: function_of(props, "IntegrationUri") for name, props in of_type("AWS::ApiGatewayV2::Integration").items()
    }
    routes = of_type("AWS::ApiGatewayV2::Route")
    functions = {
        str(props["RouteKey"]): integrations[str(props["Target"]["Fn::Sub"]).split("${")[1].rstrip("}")]
        for props in routes.values()
    }
    answered = {str(props["RouteId"]["Ref"]) for props in of_type("AWS::ApiGatewayV2::RouteResponse").values()}
    authorizers = [function_of(props, "AuthorizerUri") for props in of_type("AWS::ApiGatewayV2::Authorizer").values()]
    stages = [str(props["StageName"]) for props in of_type("AWS::ApiGatewayV2::Stage").values()]
    return SocketRoutes(
        stage=stages[0] if stages else "v1",
        functions=functions,
        two_way=frozenset(str(routes[name]["RouteKey"]) for name in answered),
        authorizer=authorizers[0] if authorizers else None,
    )


@dataclass
class Connection:
    id: str
    user: str
    authorizer: dict[str, Any]
    socket: SyncConnection
    connected_at: float  # epoch seconds
    last_active: float  # the gateway's clock
    opened: float
    source_ip: str
    gone: bool = False
    closed_by: tuple[int, str] | None = field(default=None)
    # One message at a time: the frames of a long one are not interleaved with another's, which the
    # websockets connection refuses (API Gateway queues concurrent posts to one connection).
    sending: threading.Lock = field(default_factory=threading.Lock)


class SocketGateway:
    """The WebSocket API of ``runner`` (a ``LocalRunner``), its ``@connections`` at ``endpoint``."""

    def __init__(
        self,
        runner: Any,
        routes: SocketRoutes,
        endpoint: str,
        *,
        time_scale: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._runner = runner
        self.routes = routes
        self.endpoint = endpoint
        self.idle_s = IDLE_S * time_scale
        self.connection_s = CONNECTION_S * time_scale
        self._clock = clock
        self._connections: dict[str, Connection] = {}
        # A call signed for execute-api in the runner's region, as the deployed @connections takes one
        # (another region's signature is refused there: the product's pushes would all fail).
        self._signed = re.compile(
            rf"^AWS4-HMAC-SHA256 Credential=[^/]+/\d{{8}}/{re.escape(runner.region)}/execute-api/aws4_request, "
        )
        self._lock = threading.Lock()

    # -- HTTP: the page and @connections -------------------------------------------------------

    def answer(self, request: HttpRequest) -> HttpResponse | None:
        """The page, or an ``@connections`` call; None for any other request."""
        if request.path == PAGE_PATH and request.method in ("GET", "HEAD"):
            return HttpResponse(200, [("Content-Type", "text/html; charset=utf-8")], PAGE.read_bytes())
        prefix = f"/{self.routes.stage}/@connections/"
        if not request.path.startswith(prefix):
            return None
        signature = next((value for name, value in request.headers if name.lower() == "authorization"), "")
        if not signature:
            return _error(403, "MissingAuthenticationTokenException", "the @connections API takes SigV4-signed calls")
        if not self._signed.match(signature):
            return _error(403, "InvalidSignatureException", f"sign for execute-api in {self._runner.region}")
        connection = self._live(unquote(request.path[len(prefix) :]))
        if connection is None:
            return _error(410, "GoneException", "the connection is gone")
        if request.method == "POST":
            if len(request.body) > MESSAGE_BYTES:
                return _error(413, "PayloadTooLargeException", "a message is at most 128 KB")
            self._send(connection, request.body.decode("utf-8", "replace"))
            return HttpResponse(200, [], b"")
        if request.method == "DELETE":
            connection.socket.close(1000, "")
            return HttpResponse(204, [], b"")
        since = datetime.fromtimestamp(connection.connected_at, UTC).isoformat()
        return json_response(200, {"connectedAt": since, "identity": {"sourceIp": connection.source_ip}})

    # -- the upgrade and the connection's life ---------------------------------------------------

    def serve(self, handler: Any) -> None:
        """Answer the upgrade request ``handler`` (http.server's) holds, and serve the connection
        on its thread until it closes."""
        split = urlsplit(handler.path)
        query = {name: values[-1] for name, values in parse_qs(split.query).items()}
        headers = dict(handler.headers.items())
        if split.path.rstrip("/") != f"/{self.routes.stage}":
            return _refuse(handler, 403, "Forbidden")
        connection_id = secrets.token_urlsafe(10) + "="
        context = self._request_context("$connect", "CONNECT", connection_id)
        user = headers.get("X-Local-User") or query.get("localUser")
        if user:
            authorizer: dict[str, Any] = {"principalId": user}
        else:
            let_in = self._authorize(headers, query, context)
            if isinstance(let_in, int):
                return _refuse(handler, let_in, "Unauthorized" if let_in == 401 else "Forbidden")
            authorizer = let_in
        connect = {
            "requestContext": {**context, "authorizer": authorizer},
            "headers": headers,
            "multiValueHeaders": {name: [value] for name, value in headers.items()},
            "queryStringParameters": query or None,
            "isBase64Encoded": False,
        }
        status = self._status_of("$connect", connect)
        if not 200 <= status < 300:
            return _refuse(handler, status, "Forbidden")
        handshake = ServerProtocol()  # http.server read the request: the handshake answers it
        handshake.send_response(handshake.accept(Request(handler.path, Headers(headers.items()))))
        handler.connection.sendall(b"".join(handshake.data_to_send()))
        handler.close_connection = True
        protocol = ServerProtocol(state=State.OPEN, max_size=(MESSAGE_BYTES, FRAME_BYTES))
        now = self._clock()
        connection = Connection(
            connection_id,
            str(authorizer["principalId"]),
            authorizer,
            SyncConnection(handler.connection, protocol, ping_interval=None, close_timeout=2),
            connected_at=time.time(),
            last_active=now,
            opened=now,
            source_ip=handler.client_address[0],
        )
        with self._lock:
            self._connections[connection_id] = connection
        try:
            for message in self._messages(connection):
                self._route(connection, message)
        finally:
            self._disconnect(connection)

    def _messages(self, connection: Connection) -> Iterator[str]:
        while True:
            left = min(
                connection.last_active + self.idle_s - self._clock(),
                connection.opened + self.connection_s - self._clock(),
            )
            if left <= 0:  # API Gateway's idle and duration limits: it closes with 1001
                connection.socket.close(1001, "Going away")
                return
            try:
                message = connection.socket.recv(timeout=min(left, 1.0))
            except TimeoutError:
                continue
            except ConnectionClosed:
                return
            connection.last_active = self._clock()
            yield message if isinstance(message, str) else message.decode("utf-8", "replace")

    def _route(self, connection: Connection, body: str) -> None:
        try:
            action = json.loads(body).get("action")
        except (ValueError, AttributeError):
            action = None
        key = action if isinstance(action, str) and action in self.routes.functions else "$default"
        context = self._request_context(key, "MESSAGE", connection.id)
        if key not in self.routes.functions:
            self._send(connection, json.dumps({"message": "Forbidden", **_ids(context)}))
            return
        event = {
            "requestContext": {**context, "messageId": uuid.uuid4().hex[:16], "authorizer": connection.authorizer},
            "body": body,
            "isBase64Encoded": False,
        }
        try:
            result = self._runner.invoke(self.routes.functions[key], event)
        except InvocationError as error:
            self._log(f"{key} failed: {error}")
            self._send(connection, json.dumps({"message": "Internal server error", **_ids(context)}))
            return
        if key in self.routes.two_way and isinstance(result, dict) and result.get("body"):
            self._send(connection, str(result["body"]))

    def _disconnect(self, connection: Connection) -> None:
        context = self._request_context("$disconnect", "DISCONNECT", connection.id)
        with self._lock:
            self._connections.pop(connection.id, None)
        connection.gone = True
        close = connection.socket.close_code or 1005
        context.update(disconnectStatusCode=close, disconnectReason=connection.socket.close_reason or "")
        self._status_of("$disconnect", {"requestContext": {**context, "authorizer": connection.authorizer}})

    def _send(self, connection: Connection, text: str) -> None:
        """One text message, in frames of at most 32 KB as API Gateway sends a longer one (text frames
        all: a page's ``JSON.parse`` reads a text message, not a binary one)."""
        data = text.encode()
        chunks = [data[i : i + FRAME_BYTES] for i in range(0, len(data), FRAME_BYTES)] or [b""]
        try:
            with connection.sending:
                connection.socket.send(chunks if len(chunks) > 1 else text, text=True)
            connection.last_active = self._clock()
        except ConnectionClosed:
            connection.gone = True

    def _live(self, connection_id: str) -> Connection | None:
        with self._lock:
            found = self._connections.get(connection_id)
        return None if found is None or found.gone else found

    # -- API Gateway's calls of the functions ----------------------------------------------------

    def _authorize(
        self, headers: dict[str, str], query: dict[str, str], context: dict[str, Any]
    ) -> dict[str, Any] | int:
        """The authorizer's verdict: its context (Allow), or the status API Gateway answers (401, 403, 500)."""
        if self.routes.authorizer is None:
            return 401
        event = {
            "type": "REQUEST",
            "methodArn": f"arn:aws:execute-api:{self._runner.region}:000000000000:local/{self.routes.stage}/$connect",
            "headers": headers,
            "multiValueHeaders": {name: [value] for name, value in headers.items()},
            "queryStringParameters": query,
            "multiValueQueryStringParameters": {name: [value] for name, value in query.items()},
            "stageVariables": {},
            "requestContext": context,
        }
        try:
            verdict = self._runner.invoke(self.routes.authorizer, event)
        except FunctionFailed as failed:
            return 401 if failed.error_message == "Unauthorized" else 500
        except InvocationError:
            return 500
        statements = ((verdict or {}).get("policyDocument") or {}).get("Statement") or [{}]
        if any(statement.get("Effect") != "Allow" for statement in statements):
            return 403
        return {"principalId": verdict["principalId"], **(verdict.get("context") or {})}

    def _status_of(self, route_key: str, event: dict[str, Any]) -> int:
        function = self.routes.functions.get(route_key)
        if function is None:
            return 200
        try:
            result = self._runner.invoke(function, event)
        except InvocationError as error:
            self._log(f"{route_key} failed: {error}")
            return 500
        return int((result or {}).get("statusCode", 200)) if isinstance(result, dict) else 200

    def _request_context(self, route_key: str, event_type: str, connection_id: str) -> dict[str, Any]:
        now = datetime.now(UTC)
        request_id = uuid.uuid4().hex[:16]
        connection = self._live(connection_id)
        return {
            "routeKey": route_key,
            "eventType": event_type,
            "extendedRequestId": request_id,
            "requestTime": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "messageDirection": "IN",
            "stage": self.routes.stage,
            "connectedAt": int((connection.connected_at if connection else now.timestamp()) * 1000),
            "requestTimeEpoch": int(now.timestamp() * 1000),
            "identity": {"sourceIp": "127.0.0.1"},
            "requestId": request_id,
            "domainName": urlsplit(self.endpoint).netloc,
            "connectionId": connection_id,
            "apiId": "local",
        }

    def _log(self, message: str) -> None:
        print(f"[runner] socket: {message}", file=sys.stderr, flush=True)


def _ids(context: dict[str, Any]) -> dict[str, str]:
    return {"connectionId": context["connectionId"], "requestId": context["requestId"]}


def _error(status: int, error_type: str, message: str) -> HttpResponse:
    return json_response(status, {"message": message}, [("x-amzn-ErrorType", error_type)])


def _refuse(handler: Any, status: int, message: str) -> None:
    """API Gateway's answer to a refused upgrade: an HTTP status, no WebSocket."""
    body = json.dumps({"message": message}).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)
    handler.close_connection = True
