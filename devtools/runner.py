"""The Docker-free local runner: `sam local` without Docker, read from template.yaml
(docs/local.md#the-local-runner-no-docker).

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from .local_aws import LocalAws, ensure_queues, ensure_tables
from .runner_api import (
    API_GATEWAY_MAX_BODY_BYTES,
    API_GATEWAY_TIMEOUT_S,
    ApiEntrances,
    Entrance,
    HttpRequest,
    HttpResponse,
    MalformedProxyResponse,
    MethodNotAllowed,
    RouteTable,
    Unauthenticated,
    build_proxy_event,
    gateway_context,
    json_response,
    proxy_response_to_http,
)
from .runner_event_sources import DeliveryReport, deliver, scheduled_event
from .runner_gateway import DEFAULT_STATUS, GatewayAnswers, gateway_responses
from .runner_lambda import (
    FunctionFailed,
    FunctionUnavailable,
    HandlerLoader,
    InProcessLambda,
    InvocationError,
    import_handler_from,
    runtime_variables,
)
from .runner_local import LOCAL_PREFIX, local_route_answer, nudge_day_banner
from .runner_local_fixes import identity_fix, route_fix, served_at_root, with_local_fix
from .runner_queues import DrainReport, QueueSource
from .runner_sigv4 import SignatureRefused
from .runner_socket import PAGE_PATH, SocketGateway, socket_routes
from .runner_template import (
    FunctionSpec,
    IntrinsicResolver,
    QueueSpec,
    TemplateError,
    api_stage_name,
    function_environment,
    function_specs,
    queue_specs,
    queue_subscriptions,
    route_specs,
    schedule_specs,
)
from .swagger import ApiDocs
from .template import ROOT, load_template

DEFAULT_PORT = 3000
# An SQS event source without ScalingConfig: Lambda scales it up to the account's concurrency;
# locally this many batches run at once.
LOCAL_DEFAULT_CONCURRENCY = 5
DEFAULT_METRICS_NAMESPACE = "LambdaAgents"
# Settings a developer may point elsewhere from the shell without editing the template.
SHELL_OVERRIDABLE = (
    "OPENAI_BASE_URL",
    "OPENAI_MODEL",
    "OPENAI_STREAM",
    "OPENAI_FIRST_TOKEN_TIMEOUT_SECONDS",
    "OPENAI_STALL_TIMEOUT_SECONDS",
    "OPENAI_TOKENS_PER_SECOND",
    "OPENAI_FIRST_TOKEN_SECONDS",
    "POWERTOOLS_LOG_LEVEL",
    # the WebSocket API's authorizer checks tokens of this pool and client (a real one, or a test's keys)
    "USER_POOL_ID",
    "USER_POOL_CLIENT_ID",
    "COGNITO_JWKS_URL",
)


def local_mode(user_env: Mapping[str, str]) -> str:
    """mock unless the developer has a key (an explicit AI_AGENT_MODE in the shell wins)."""
    explicit = user_env.get("AI_AGENT_MODE")
    if explicit:
        return explicit
    return "openai" if user_env.get("OPENAI_API_KEY") else "mock"


class LocalRunner:
    """The template's functions, API, queues and schedules, on local endpoints."""

    def __init__(
        self,
        template: dict[str, Any] | None = None,
        *,
        root: Path = ROOT,
        environ: Mapping[str, str] | None = None,
        local_aws: LocalAws | None = None,
        handler_loader: HandlerLoader | None = None,
        parameter_overrides: Mapping[str, str] | None = None,
        api_timeout_s: float = API_GATEWAY_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        # A copy: load_template() is cached and shared, and nothing here may change it.
        self.template = copy.deepcopy(template if template is not None else load_template())
        self._user_env = dict(os.environ if environ is None else environ)
        self.aws = local_aws or LocalAws(self._user_env)
        self._owns_aws = local_aws is None
        self._parameters = dict(parameter_overrides or {})
        # As CloudFormation does: a resource whose Condition is false for these parameters is not there.
        deciding = IntrinsicResolver(self.template, region=self.aws.region, parameter_overrides=self._parameters)
        self.template["Resources"] = {
            name: body
            for name, body in self.template.get("Resources", {}).items()
            if "Condition" not in body or deciding.condition(str(body["Condition"]))
        }
        self.functions = function_specs(self.template)
        self.routes = RouteTable(route_specs(self.template))
        self.subscriptions = queue_subscriptions(self.template)
        self.schedules = schedule_specs(self.template)
        self.region = self.aws.region
        self._resolver = IntrinsicResolver(self.template, region=self.region, parameter_overrides=self._parameters)
        self.queues: dict[str, QueueSpec] = queue_specs(self.template, self._resolver)
        base_path = (
            self._resolver.parameter("ApiBasePath") if "ApiBasePath" in self.template.get("Parameters", {}) else ""
        )
        self.entrances = ApiEntrances(api_stage_name(self.template, self._resolver), base_path)
        self.gateway = GatewayAnswers(gateway_responses(self.template, self._resolver.resolve))
        self.queue_urls: dict[str, str] = {}
        self.root = root  # where the template's CodeUri and layer paths are
        self._lambda = InProcessLambda(handler_loader or import_handler_from(root), self.region, clock)
        self._api_timeout_s = api_timeout_s
        self._clock = clock
        self._wall_clock = wall_clock
        self._started = False
        self._sqs: Any = None
        self.docs = ApiDocs(self.entrances.servers())
        self.sockets: SocketGateway | None = None  # the WebSocket API, once a server serves it

    def attach_sockets(self, server_url: str) -> None:
        """Serve the template's WebSocket API (``runner_socket``) and its @connections at ``server_url``."""
        routes = socket_routes(self.template)
        scale = float(self._user_env.get("PRODUCT_TIME_SCALE") or 1)
        endpoint = f"{server_url}/{routes.stage}" if routes else ""
        self.sockets = None if routes is None else SocketGateway(self, routes, endpoint, time_scale=scale)

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> LocalRunner:
        if self._started:
            return self
        self.aws.start()
        ensure_tables(self.aws.client("dynamodb"), self.template)
        self._sqs = self.aws.client("sqs")
        self.queue_urls = ensure_queues(self._sqs, self.queues)
        self._resolver = IntrinsicResolver(
            self.template, region=self.region, queue_urls=self.queue_urls, parameter_overrides=self._parameters
        )
        self._started = True
        return self

    def stop(self) -> None:
        self._lambda.close()  # its functions' cached clients point at its endpoints
        if self._owns_aws:
            self.aws.stop()
        self._started = False

    def __enter__(self) -> LocalRunner:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def sqs(self) -> Any:
        self.start()
        return self._sqs

    # -- functions ----------------------------------------------------------------------------

    def function(self, logical_id: str) -> FunctionSpec:
        spec = self.functions.get(logical_id)
        if spec is None:
            known = ", ".join(sorted(self.functions))
            raise TemplateError(f"no function {logical_id!r} in the template; functions: {known}")
        return spec

    def environment_for(self, logical_id: str) -> dict[str, str]:
        """The function's variables: the template's, resolved, then the local overrides."""
        function = self.function(logical_id)
        self.start()
        endpoints = self.aws.endpoints
        variables = function_environment(self.template, logical_id, self._resolver)
        # Variables the template leaves empty (sam local's slots: OPENAI_API_KEY, endpoints) keep
        # the shell's value, as under sam local, instead of blanking it for the invocation.
        variables = {name: value for name, value in variables.items() if value != ""}
        variables["AI_AGENT_MODE"] = local_mode(self._user_env)
        for name in SHELL_OVERRIDABLE:
            if self._user_env.get(name):
                variables[name] = self._user_env[name]
        variables["OTEL_SDK_DISABLED"] = "true"  # no ADOT layer here, whatever OtelLayerArn says
        variables.setdefault("POWERTOOLS_METRICS_NAMESPACE", DEFAULT_METRICS_NAMESPACE)
        variables["AWS_REGION"] = variables["AWS_DEFAULT_REGION"] = endpoints.region
        variables.update(self.aws.credentials)
        variables["AWS_ENDPOINT_URL_DYNAMODB"] = endpoints.dynamodb
        variables["AWS_ENDPOINT_URL_SQS"] = endpoints.sqs
        variables["AWS_ENDPOINT_URL_EVENTBRIDGE"] = endpoints.events
        variables.update(runtime_variables(function, self.root))
        if "SOCKET_API_ENDPOINT" in variables:  # an answer's frames go to the served WebSocket API, or nowhere
            if self.sockets is not None:
                variables["SOCKET_API_ENDPOINT"] = self.sockets.endpoint
            else:
                del variables["SOCKET_API_ENDPOINT"], variables["CONNECTIONS_TABLE"]
        return variables

    def invoke(self, logical_id: str, event: Any, env_overrides: Mapping[str, str] | None = None) -> Any:
        """Invoke like Lambda: returns the JSON result or raises InvocationError."""
        variables = {**self.environment_for(logical_id), **(env_overrides or {})}
        return self._lambda.invoke(self.function(logical_id), event, variables)

    # -- API ----------------------------------------------------------------------------------

    def handle_http(self, request: HttpRequest) -> HttpResponse:
        if self.sockets is not None and (answer := self.sockets.answer(request)) is not None:
            return answer  # the WebSocket API's @connections, the runner's page
        entrance = self.entrances.of(request.path)
        if entrance.kind == "root":
            docs = self.docs.answer(request.method, request.path)  # /swagger, /openapi.json
            if docs is not None:
                return docs
            if request.path.startswith(LOCAL_PREFIX):  # the runner's own control routes, never the API's
                return local_route_answer(self, request, self._wall_clock)
            answered, note = served_at_root(request, self._api_answer(request, entrance), self.entrances.stage.prefix)
            _log(note)
            return answered
        return self._api_answer(request, entrance)

    def _api_answer(self, request: HttpRequest, entrance: Entrance) -> HttpResponse:
        if len(request.body) > API_GATEWAY_MAX_BODY_BYTES:
            _log(f"413 {request.method} {request.path}: {len(request.body)} bytes, past API Gateway's 10 MB")
            return self._gateway("REQUEST_TOO_LARGE", request, entrance)
        route_path = entrance.route_path(request.path)
        matched = self.routes.match(request.method, route_path)
        if matched is None or isinstance(matched, MethodNotAllowed):
            # API Gateway cannot tell a path no route has from an unsigned call and answers both alike;
            # locally the body also says which it was and what to call instead.
            fix, based_on = route_fix(matched, self.routes, request.method, route_path, entrance.prefix)
            _log(f"403 {request.method} {request.path}: {fix}")
            refused = self._gateway("MISSING_AUTHENTICATION_TOKEN", request, entrance)
            return with_local_fix(refused, fix, **based_on)
        received = self._clock()
        try:
            event = build_proxy_event(matched, request, entrance, region=self.region)
        except Unauthenticated as exc:
            # A Cognito route without a token is 401; an IAM route without a signature 403, as in AWS.
            cognito = matched.route.auth == "cognito"
            kind = "UNAUTHORIZED" if cognito else "MISSING_AUTHENTICATION_TOKEN"
            _log(f"{DEFAULT_STATUS[kind]} {request.method} {request.path}: {exc}")
            refused = self._gateway(kind, request, entrance)
            # The body is the template's (a token, a signature); locally the caller is a header.
            fix, based_on = identity_fix(matched.route)
            hint = ("X-Local-Runner", fix)
            return with_local_fix(dataclasses.replace(refused, headers=[*refused.headers, hint]), fix, **based_on)
        except SignatureRefused as refusal:
            _log(f"403 {request.method} {request.path}: {refusal.error_type}: {refusal.message}")
            said = (refusal.message, refusal.error_type)
            return self._gateway(refusal.response_type, request, entrance, said=said)
        try:
            result = self.invoke(matched.route.function_id, event)
            response = proxy_response_to_http(result)
        except FunctionUnavailable as exc:
            _log(f"502 {exc}")
            return self._gateway("DEFAULT_5XX", request, entrance, status=502)
        except (FunctionFailed, MalformedProxyResponse) as exc:
            if self._past_api_timeout(received, matched.route.function_id):
                return self._gateway("INTEGRATION_TIMEOUT", request, entrance)
            _log(f"502 {matched.route.function_id}: {exc}")
            return self._gateway("DEFAULT_5XX", request, entrance, status=502)
        if self._past_api_timeout(received, matched.route.function_id):
            return self._gateway("INTEGRATION_TIMEOUT", request, entrance)
        return response

    def _gateway(
        self,
        response_type: str,
        request: HttpRequest,
        entrance: Entrance,
        status: int | None = None,
        said: tuple[str, str] | None = None,
    ) -> HttpResponse:
        """API Gateway's own answer of ``response_type``, as the template's gateway responses say."""
        context = gateway_context(request, entrance)
        return self.gateway.answer(response_type, context, request.headers, status, said)

    def _past_api_timeout(self, received: float, function_id: str) -> bool:
        """API Gateway answers 504 once its limit has passed and drops what the function returns later
        (which still ran to its end, and wrote what it wrote, as it would in AWS). The time the
        invocation waited here for another function to end is left out: in AWS it would not wait."""
        elapsed = self._clock() - received - self._lambda.waited_s()
        if elapsed <= self._api_timeout_s:
            return False
        _log(f"504 {function_id}: answered after {elapsed:.1f}s, past API Gateway's {self._api_timeout_s:.0f}s")
        return True

    # -- queues and schedules -----------------------------------------------------------------

    def send_message(self, queue_id: str, body: str, attributes: Mapping[str, Any] | None = None) -> str:
        if queue_id not in self.queues:
            raise TemplateError(f"no queue {queue_id!r} in the template; queues: {', '.join(sorted(self.queues))}")
        sent = self.sqs.send_message(
            QueueUrl=self.queue_urls[queue_id], MessageBody=body, MessageAttributes=dict(attributes or {})
        )
        return str(sent["MessageId"])

    def deliver(
        self, queue_id: str, *, redeliver_failures: bool = True, env_overrides: Mapping[str, str] | None = None
    ) -> DeliveryReport:
        """Drain the queue into its consuming function (see runner_event_sources.deliver)."""
        subscription = self.subscriptions.get(queue_id)
        if subscription is None:
            consumed = ", ".join(sorted(self.subscriptions)) or "none"
            raise TemplateError(f"no function consumes queue {queue_id!r}; consumed queues: {consumed}")
        self.start()
        return deliver(
            self._sqs,
            self.queues[queue_id],
            self.queue_urls,
            subscription,
            lambda function_id, event: self.invoke(function_id, event, env_overrides),
            self.region,
            on_error=lambda exc: _log(f"{subscription.function_id}: {exc}"),
            redeliver_failures=redeliver_failures,
        )

    def drain_like_lambda(
        self, queue_id: str, *, time_limit_s: float = 600.0, env_overrides: Mapping[str, str] | None = None
    ) -> DrainReport:
        """Drain the queue as Lambda's event source would: its batch size and batching window, at
        most its maximum concurrency of batches at once, each in a container process of its own
        (``runner_queues``); failures wait out their visibility timeout, redrive as configured."""
        subscription = self.subscriptions.get(queue_id)
        if subscription is None:
            raise TemplateError(f"no function consumes queue {queue_id!r}")
        self.start()
        raw = subscription.maximum_concurrency
        concurrency = int(self._resolver.resolve(raw)) if raw is not None else LOCAL_DEFAULT_CONCURRENCY
        source = QueueSource(
            sqs=self._sqs,
            queue=self.queues[queue_id],
            urls=self.queue_urls,
            subscription=subscription,
            function=self.function(subscription.function_id),
            environment={**self.environment_for(subscription.function_id), **(env_overrides or {})},
            region=self.region,
            maximum_concurrency=concurrency,
            root=self.root,
        )
        return source.drain(time_limit_s)

    def deliver_all(
        self, *, redeliver_failures: bool = True, env_overrides: Mapping[str, str] | None = None
    ) -> list[DeliveryReport]:
        return [
            self.deliver(queue_id, redeliver_failures=redeliver_failures, env_overrides=env_overrides)
            for queue_id in self.subscriptions
        ]

    def fire_schedule(
        self,
        function_id: str,
        event_name: str | None = None,
        env_overrides: Mapping[str, str] | None = None,
        at: datetime | None = None,
    ) -> Any:
        """Send the function the event its Schedule rule would send (at ``at``, now by default);
        returns its result."""
        schedules = self.schedules.get(function_id, [])
        chosen = [s for s in schedules if event_name is None or s.event_name == event_name]
        if not chosen:
            scheduled = ", ".join(sorted(self.schedules)) or "none"
            raise TemplateError(f"{function_id} has no Schedule event {event_name or ''}; scheduled: {scheduled}")
        return self.invoke(function_id, scheduled_event(chosen[0], self.region, at), env_overrides)

    def fire(
        self,
        function_id: str,
        event_name: str | None = None,
        *,
        replay_failures_at_once: bool = False,
        time_limit_s: float = 600.0,
        env_overrides: Mapping[str, str] | None = None,
    ) -> tuple[Any, list[DeliveryReport]]:
        """The scheduled event, then every consumed queue it filled delivered as Lambda's event source
        delivers it (``drain_like_lambda``: batch size, batching window, maximum concurrency, a failed
        or deferred message back only after its visibility timeout), until no consumed queue holds a
        message or ``time_limit_s`` ends. ``replay_failures_at_once`` delivers one batch at a time and
        makes a failure visible again at once instead (``deliver``): quicker, but it skips visibility
        timeouts and a deferral's backoff, so a rate-limited provider's users end in fallbacks and
        dead letters a deployment would not see. ``env_overrides`` apply to every function run."""
        result = self.fire_schedule(function_id, event_name, env_overrides)
        if replay_failures_at_once:
            return result, self.deliver_all(redeliver_failures=True, env_overrides=env_overrides)
        reports: list[DeliveryReport] = []
        ends = self._clock() + time_limit_s
        while (waiting := [queue_id for queue_id in self.subscriptions if self.holds_messages(queue_id)]) and (
            left := ends - self._clock()
        ) > 0:
            for queue_id in waiting:
                reports.append(self.drain_like_lambda(queue_id, time_limit_s=left, env_overrides=env_overrides))
        return result, reports

    def holds_messages(self, queue_id: str) -> bool:
        """Whether the queue holds a message, visible or in flight."""
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        found = self.sqs.get_queue_attributes(QueueUrl=self.queue_urls[queue_id], AttributeNames=names)
        return any(int(value) for value in found["Attributes"].values())

    def describe(self) -> str:
        lines = ["functions:"]
        for spec in self.functions.values():
            handler = f"{spec.module_name}.{spec.handler_attribute}"
            lines.append(f"  {spec.logical_id:<28} {handler}  timeout {spec.timeout_s}s")
        lines.append("routes:")
        for route in sorted(self.routes.routes, key=lambda r: (r.path, r.method)):
            lines.append(f"  {route.method:<6} {route.path:<48} {route.auth:<8} -> {route.function_id}")
        lines.append("queues:")
        for queue in self.queues.values():
            consumer = self.subscriptions.get(queue.logical_id)
            target = f"-> {consumer.function_id} (batch {consumer.batch_size})" if consumer else "(no consumer)"
            redrive = ""
            if queue.max_receive_count:
                redrive = f", DLQ {queue.dead_letter_queue_id} after {queue.max_receive_count} receives"
            lines.append(f"  {queue.logical_id:<28} {target}{redrive}")
        lines.append("schedules:")
        for function_id, schedules in self.schedules.items():
            lines.extend(f"  {function_id:<28} {s.event_name}: {s.expression}" for s in schedules)
        return "\n".join(lines)


def _log(message: str) -> None:
    print(f"[runner] {message}", file=sys.stderr, flush=True)


# -- HTTP server ------------------------------------------------------------------------------


def make_server(runner: LocalRunner, port: int = DEFAULT_PORT) -> ThreadingHTTPServer:
    """An HTTP server on 127.0.0.1:port (0 picks a free port) that answers through ``runner``."""

    class ApiRequestHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self) -> None:
            if runner.sockets is not None and (self.headers.get("Upgrade") or "").lower() == "websocket":
                runner.sockets.serve(self)  # the connection's whole life, on this thread
                return
            path, _, query = self.path.partition("?")
            try:
                body = self._read_body()
            except ValueError:
                self.close_connection = True  # the rest of the request cannot be framed
                self._write(json_response(400, {"message": "Bad Request: unreadable body length"}))
                return
            request = HttpRequest(
                method=self.command,
                path=path,
                query=query,
                headers=list(self.headers.items()),
                body=body,
                source_ip=self.client_address[0],
                host=self.headers.get("Host") or "127.0.0.1",
            )
            self._write(runner.handle_http(request))

        def _write(self, response: HttpResponse) -> None:
            self.send_response(response.status, HTTPStatus(response.status).phrase if _known(response.status) else "")
            for name, value in response.headers:
                # Framing is the server's job, as API Gateway recomputes it too.
                if name.lower() not in {"content-length", "transfer-encoding", "connection"}:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)

        def _read_body(self) -> bytes:
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                chunks = []
                while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
                while self.rfile.readline().strip():  # trailers end with an empty line
                    pass
                return b"".join(chunks)
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length > 0 else b""

        # http.server dispatches on these names.
        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = _answer  # noqa: N815

        def __getattr__(self, name: str) -> Any:
            # Any other method (TRACE, QUERY, ...) goes to the route table too, which answers as API
            # Gateway does (403, its log naming the allowed methods), instead of http.server's HTML 501.
            if name.startswith("do_"):
                return self._answer
            raise AttributeError(name)

        def log_message(self, format: str, *args: Any) -> None:
            _log(format % args)

    server = ThreadingHTTPServer(("127.0.0.1", port), ApiRequestHandler)
    runner.attach_sockets(f"http://127.0.0.1:{server.server_address[1]}")
    return server


@contextmanager
def serving(runner: LocalRunner, port: int = 0) -> Iterator[str]:
    """The API on 127.0.0.1 in a background thread (tests, the demo); yields its base URL."""
    server = make_server(runner, port)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _known(status: int) -> bool:
    return status in HTTPStatus._value2member_map_


# -- CLI --------------------------------------------------------------------------------------


@contextmanager
def stdout_reserved_for_result() -> Iterator[IO[str]]:
    """Yield the real stdout and send everything else written to fd 1 (Powertools logs, EMF
    metrics, prints) to stderr, as `sam local invoke` keeps stdout for the result."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    real_stdout = os.fdopen(saved, "w", encoding="utf-8")
    previous = sys.stdout
    sys.stdout = sys.stderr
    try:
        yield real_stdout
    finally:
        sys.stdout.flush()
        sys.stdout = previous
        os.dup2(saved, 1)
        real_stdout.close()


def _read_event(source: str) -> Any:
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise SystemExit(f"error: cannot read event file {source}: {exc.strerror}") from None
    try:
        return json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise SystemExit(f"error: event file {source} is not JSON: {exc}") from None


def _parameters(values: Sequence[str]) -> dict[str, str]:
    parameters = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise SystemExit(f"error: --parameter takes Name=Value, got {item!r}")
        parameters[name] = value
    return parameters


def _runner_from(args: argparse.Namespace) -> LocalRunner:
    path = Path(args.template).resolve()
    if not path.is_file():
        raise SystemExit(f"error: no template at {path}")
    # CodeUri and layer paths are relative to the template, as for sam.
    return LocalRunner(load_template(path), root=path.parent, parameter_overrides=_parameters(args.parameter))


def _command_invoke(args: argparse.Namespace) -> int:
    event = _read_event(args.event)
    runner = _runner_from(args)
    runner.function(args.function)  # an unknown name fails before any server starts
    with stdout_reserved_for_result() as out, runner:
        try:
            result = runner.invoke(args.function, event)
        except FunctionFailed as exc:
            print(json.dumps(exc.payload()), file=out)
            return 1
        except FunctionUnavailable as exc:
            _log(f"error: {exc}")
            return 1
        print(json.dumps(result, ensure_ascii=False), file=out)
        return 0


def _command_serve(args: argparse.Namespace) -> int:
    with _runner_from(args) as runner:
        server = make_server(runner, args.port)
        poller = QueuePoller(runner, args.poll_seconds)
        if args.poll_seconds > 0 and runner.subscriptions:
            poller.start()
        host, port = server.server_address[:2]
        for route in sorted(runner.routes.routes, key=lambda r: (r.path, r.method)):
            _log(f"  {route.method:<6} {route.path:<48} {route.auth:<8} -> {route.function_id}")
        url = f"http://{host!s}:{port}"
        under = [entrance.prefix for entrance in (runner.entrances.stage, runner.entrances.base_path) if entrance]
        where = " and ".join(f"{url}{prefix}" for prefix in under)
        _log(f"serving {len(runner.routes.routes)} routes on {where}, as deployed, and at the root (Ctrl-C stops)")
        _log(f"API document: Swagger UI at http://{host!s}:{port}/swagger, JSON at /openapi.json")
        _log("identity: send X-Local-User: <user id> (user routes) or X-Local-Admin: <name> (admin routes)")
        if runner.sockets is not None:
            ws = f"ws://{host!s}:{port}/{runner.sockets.routes.stage}"
            _log(f"WebSocket API: {ws}?localUser=<user id>; watch answers arrive at {url}{PAGE_PATH}")
        for line in nudge_day_banner(runner, url):
            _log(line)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            poller.stop()
            server.server_close()
    return 0


class QueuePoller:
    """Delivers queued messages to their consumers while serving, as Lambda's pollers would."""

    def __init__(self, runner: LocalRunner, every_s: float) -> None:
        self._runner = runner
        self._every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="queue-poller", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _loop(self) -> None:
        while not self._stop.wait(self._every_s):
            try:
                # As Lambda's poller: a failed or deferred message waits out its visibility timeout.
                for report in self._runner.deliver_all(redeliver_failures=False):
                    if report.deliveries:
                        _log(report.summary())
            except Exception as exc:  # keep polling: one bad round must not stop local delivery
                _log(f"queue delivery failed: {type(exc).__name__}: {exc}")


def _command_fire(args: argparse.Namespace) -> int:
    """The scheduled event, then the queues it filled as Lambda's event sources drain them
    (``LocalRunner.fire``); exit 1 when the function failed or a message is left at the time limit."""
    runner = _runner_from(args)
    runner.function(args.function)
    with stdout_reserved_for_result() as out, runner:
        try:
            result, reports = runner.fire(
                args.function,
                args.event_name,
                replay_failures_at_once=args.replay_failures_at_once,
                time_limit_s=args.time_limit,
            )
        except InvocationError as exc:
            _log(f"error: {exc}")
            return 1
        print(json.dumps(result, ensure_ascii=False), file=out)
        for report in reports:
            _log(report.summary())
        if not reports:
            _log("no queue with a consumer holds a message: nothing to deliver")
        return 1 if any(report.left_in_queue for report in reports) else 0


def _command_drain(args: argparse.Namespace) -> int:
    """Drain a queue as Lambda's event source would (batch size, window, maximum concurrency,
    a process per container, visibility timeouts and redrive)."""
    runner = _runner_from(args)
    with runner:
        report = runner.drain_like_lambda(args.queue, time_limit_s=args.time_limit)
        _log(report.summary())
        return 0 if report.left_in_queue == 0 else 1


def _command_event(args: argparse.Namespace) -> int:
    """Print the proxy event API Gateway would send for a request (like `sam local generate-event`):
    for ``/v1/...`` as called on the execute-api URL, for ``<ApiBasePath>/...`` as behind the custom
    domain, for a path at the root as on a custom domain mapped without a base path."""
    runner = _runner_from(args)
    path, _, query = args.path.partition("?")
    headers = [("Content-Type", "application/json")] if args.body is not None else []
    if args.user:
        headers.append(("X-Local-User", args.user))
    if args.admin:
        headers.append(("X-Local-Admin", args.admin))
    entrance = runner.entrances.of(path)
    matched = runner.routes.match(args.method, entrance.route_path(path))
    if matched is None or isinstance(matched, MethodNotAllowed):
        raise TemplateError(f"no route for {args.method.upper()} {path}; see `python -m devtools.runner list`")
    body = (args.body or "").encode()
    request = HttpRequest(method=args.method.upper(), path=path, query=query, headers=headers, body=body)
    try:
        event = build_proxy_event(matched, request, entrance)
    except Unauthenticated:
        flag = "--user" if matched.route.auth == "cognito" else "--admin"
        raise TemplateError(f"{matched.route.method} {matched.route.path} needs an identity: pass {flag}") from None
    print(json.dumps(event, indent=2, ensure_ascii=False))
    return 0


def _command_list(args: argparse.Namespace) -> int:
    runner = _runner_from(args)
    print(runner.describe())
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m devtools.runner", description=__doc__.split("\n\n")[0])
    parser.add_argument("-t", "--template", default=str(ROOT / "template.yaml"), help="template file")
    parser.add_argument("--parameter", action="append", default=[], metavar="NAME=VALUE", help="template parameter")
    commands = parser.add_subparsers(dest="command", required=True)
    invoke = commands.add_parser("invoke", help="invoke a function with an event file; prints its JSON result")
    invoke.add_argument("function", metavar="LogicalId")
    invoke.add_argument("event", help="event JSON file, or - for stdin")
    invoke.set_defaults(run=_command_invoke)
    serve = commands.add_parser("serve", help="serve the template's API on 127.0.0.1")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT)
    serve.add_argument("--poll-seconds", type=float, default=1.0, help="queue delivery interval; 0 disables")
    serve.set_defaults(run=_command_serve)
    fire = commands.add_parser(
        "fire", help="send a function its scheduled event, then drain the queues it filled as Lambda would"
    )
    fire.add_argument("function", metavar="LogicalId")
    fire.add_argument("--event-name", default=None)
    fire.add_argument("--time-limit", type=float, default=600.0, help="seconds before draining stops (600)")
    fire.add_argument(
        "--replay-failures-at-once",
        action="store_true",
        help="deliver one batch at a time and retry a failed or deferred message at once: skips visibility "
        "timeouts, backoffs, the batching window and concurrency (quick, but a rate-limited provider's users "
        "end in fallbacks and dead letters a deployment would not see)",
    )
    fire.set_defaults(run=_command_fire)
    drain = commands.add_parser("drain", help="drain a queue the way Lambda's SQS event source would")
    drain.add_argument("queue", metavar="QueueLogicalId")
    drain.add_argument("--time-limit", type=float, default=600.0, help="seconds before it stops (600)")
    drain.set_defaults(run=_command_drain)
    event = commands.add_parser("event", help="print the API Gateway event for a request, for event files")
    event.add_argument("method")
    event.add_argument("path", help="request path as called (/v1/..., <ApiBasePath>/... or the root), optional ?query")
    event.add_argument("--user", help="caller of a Cognito route (becomes claims.sub)")
    event.add_argument("--admin", help="caller of an AWS_IAM route (becomes identity.userArn)")
    event.add_argument("--body", help="request body (JSON text)")
    event.set_defaults(run=_command_event)
    listing = commands.add_parser("list", help="functions, routes, queues and schedules of the template")
    listing.set_defaults(run=_command_list)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except TemplateError as exc:
        _log(f"error: {exc}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
