"""Runs a function's handler in this process the way Lambda would (docs/local.md#the-local-runner-no-docker).

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .runner_template import LOCAL_ACCOUNT_ID, FunctionSpec

Handler = Callable[[Any, Any], Any]
HandlerLoader = Callable[[FunctionSpec], Handler]


# The vCPUs a function's execution environment shows (os.cpu_count()), by its MemorySize, up to each
# bound. AWS documents the CPU share, one vCPU-second of credit per second at 1,769 MB
# (https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html), and up to 6 vCPUs at
# 10,240 MB (https://aws.amazon.com/about-aws/whats-new/2020/12/aws-lambda-supports-10gb-memory-6-vcpu-cores-lambda-functions/);
# the count it exposes steps at these bounds, as measured (https://github.com/rwnx/lambda-cpuinfo),
# 2 below 3,009 MB: a 512 MB function's default thread pool has min(32, 2 + 4) = 6 threads.
LAMBDA_VCPUS_BY_MEMORY = ((3008, 2), (5307, 3), (7076, 4), (8845, 5), (10240, 6))
LAMBDA_MEMORY_MB = (128, 10240)


def lambda_vcpus(memory_mb: int) -> int:
    """The vCPUs Lambda shows a function of ``memory_mb`` (see ``LAMBDA_VCPUS_BY_MEMORY``)."""
    low, high = LAMBDA_MEMORY_MB
    if not low <= memory_mb <= high:
        raise ValueError(f"MemorySize {memory_mb} MB is outside Lambda's {low}-{high} MB")
    return next(vcpus for bound, vcpus in LAMBDA_VCPUS_BY_MEMORY if memory_mb <= bound)


@contextmanager
def lambda_cpu_count(vcpus: int) -> Iterator[None]:
    """``os.cpu_count()`` and ``os.process_cpu_count()`` report ``vcpus`` while an in-process
    invocation runs (a container process gets it from PYTHON_CPU_COUNT instead)."""
    module: Any = os  # process_cpu_count is new in 3.13; mypy checks against the oldest Python
    names = [name for name in ("cpu_count", "process_cpu_count") if hasattr(module, name)]
    saved = {name: getattr(module, name) for name in names}
    for name in names:
        setattr(module, name, lambda: vcpus)
    try:
        yield
    finally:
        for name, function in saved.items():
            setattr(module, name, function)


class InvocationError(RuntimeError):
    """The function could not give a result."""


class FunctionUnavailable(InvocationError):
    """The function's code is missing or does not import (for example, not written yet)."""


class FunctionFailed(InvocationError):
    """The handler raised, overran its timeout or returned something that is not JSON."""

    def __init__(
        self, error_type: str, message: str, stack: list[str] | None = None, request_id: str | None = None
    ) -> None:
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type
        self.error_message = message
        self.stack = stack or []
        self.request_id = request_id

    def payload(self) -> dict[str, Any]:
        """The error document Lambda returns for a failed invocation (with the request's id when
        the handler ran, as the runtime gives it)."""
        document: dict[str, Any] = {"errorMessage": self.error_message, "errorType": self.error_type}
        if self.request_id is not None:
            document["requestId"] = self.request_id
        document["stackTrace"] = self.stack
        return document


@dataclass
class LambdaContext:
    """What handlers and Powertools read from the Lambda context object."""

    function_name: str
    # Text, as Lambda's runtime (awslambdaric) reads it from AWS_LAMBDA_FUNCTION_MEMORY_SIZE:
    # Powertools logs it as "function_memory_size": "512".
    memory_limit_in_mb: str
    invoked_function_arn: str
    aws_request_id: str
    timeout_s: int
    function_version: str = "$LATEST"
    log_group_name: str = ""
    log_stream_name: str = "local"
    identity: Any = None
    client_context: Any = None
    _started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        elapsed_ms = (time.monotonic() - self._started) * 1000
        return max(0, int(self.timeout_s * 1000 - elapsed_ms))


def lambda_context(function: FunctionSpec, region: str) -> LambdaContext:
    return LambdaContext(
        function_name=function.logical_id,
        memory_limit_in_mb=str(function.memory_mb),
        invoked_function_arn=f"arn:aws:lambda:{region}:{LOCAL_ACCOUNT_ID}:function:{function.logical_id}",
        aws_request_id=str(uuid.uuid4()),
        timeout_s=function.timeout_s,
        log_group_name=f"/aws/lambda/{function.logical_id}",
    )


def runtime_variables(function: FunctionSpec, root: Path) -> dict[str, str]:
    """What Lambda's python3.13 runtime adds to a function's environment beyond its template
    variables, as `sam local` shows it in the real runtime (tests/docker): the runtime's name
    (Powertools and awslambdaric change their JSON encoding on it), the function's identity and log
    names, the code folder as LAMBDA_TASK_ROOT (Powertools takes it to mean "in Lambda") and the
    handler as _HANDLER."""
    return {
        "AWS_EXECUTION_ENV": f"AWS_Lambda_{function.runtime}",
        "AWS_LAMBDA_FUNCTION_NAME": function.logical_id,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_mb),
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{function.logical_id}",
        "AWS_LAMBDA_LOG_STREAM_NAME": "$LATEST",
        "LAMBDA_TASK_ROOT": str(root / function.code_uri.strip("/")),
        "_HANDLER": function.handler,
    }


def import_handler_from(root: Path) -> HandlerLoader:
    """Loader for the real handlers: ``functions/<dir>/app.py`` with the layers on sys.path."""

    def load(function: FunctionSpec) -> Handler:
        for directory in (root, *(root / layer for layer in function.layer_dirs)):
            if str(directory) not in sys.path:
                sys.path.insert(0, str(directory))
        if not (root / function.module_path).is_file():
            raise FunctionUnavailable(
                f"{function.logical_id}: {function.module_path} does not exist yet "
                f"(CodeUri {function.code_uri}, Handler {function.handler})"
            )
        try:
            module = importlib.import_module(function.module_name)
        except Exception as exc:  # any import-time failure is the function's, not the runner's
            raise FunctionUnavailable(
                f"{function.logical_id}: importing {function.module_name} failed: {type(exc).__name__}: {exc}"
            ) from exc
        handler = getattr(module, function.handler_attribute, None)
        if not callable(handler):
            missing = f"{function.module_name} has no {function.handler_attribute}"
            raise FunctionUnavailable(f"{function.logical_id}: {missing}")
        fresh_container(module)
        return handler  # type: ignore[no-any-return]

    return load


SHARED_PACKAGES = ("lambda_agents",)


def fresh_container(module: Any) -> None:
    """A runner's first invocation of a function is a cold start, as in a new Lambda container.

    The module may have been imported earlier in this process (by another runner, on other local
    endpoints, or by a test); what it and the shared layer cached then (settings, boto3 clients
    bound to an endpoint, models) is dropped here, so it is built again from this runner's
    environment. Caches are each function's composition root (``lambda_agents.composition``), the
    ``functools.cache`` / ``lru_cache`` functions at module level, Powertools Parameters'
    providers, which keep an SSM client and the values they read (a new container reads its key
    from Parameter Store again, under its own role), and an API function's resolver, which reads
    the custom domain's base path (``API_BASE_PATH``) when it is built.
    """
    modules = [module] + [
        loaded
        for name, loaded in list(sys.modules.items())
        if loaded is not None and name.split(".")[0] in SHARED_PACKAGES
    ]
    composition = sys.modules.get("lambda_agents.composition")  # loaded with the handler, if it has a root
    root_type = getattr(composition, "CompositionRoot", None)
    resolver_type = getattr(sys.modules.get("lambda_agents.api.resolver"), "JsonApiResolver", None)
    for loaded in modules:
        for value in list(vars(loaded).values()):
            if root_type is not None and isinstance(value, root_type):
                value.reset()
                continue
            cold_start = getattr(value, "cold_start", None)
            if resolver_type is not None and isinstance(value, resolver_type) and callable(cold_start):
                cold_start()
                continue
            clear = getattr(value, "cache_clear", None)
            if callable(clear) and getattr(value, "__module__", None) == loaded.__name__:
                clear()
    parameters = sys.modules.get("aws_lambda_powertools.utilities.parameters.base")
    if parameters is not None:
        parameters.DEFAULT_PROVIDERS.clear()


def own_observability() -> None:
    """Every function of this process shares the layer's Powertools logger and metrics, built
    with the service of whichever function imported them first; each invocation rebinds them to
    its own environment's POWERTOOLS_SERVICE_NAME, as its own Lambda container would have."""
    observability = sys.modules.get("lambda_agents.observability")
    bind = getattr(observability, "bind_to_environment", None)
    if callable(bind):
        bind()


@contextmanager
def applied_environment(variables: Mapping[str, str]) -> Iterator[None]:
    """Set ``variables`` in os.environ for the duration, then restore what was there."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class InProcessLambda:
    """Invokes handlers in-process, one at a time, with each function's environment."""

    def __init__(self, loader: HandlerLoader, region: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._loader = loader
        self._region = region
        self._clock = clock
        self._handlers: dict[str, Handler] = {}
        self._lock = threading.RLock()
        self._waits = threading.local()

    def close(self) -> None:
        """The containers end: what their functions cached (clients bound to this runner's endpoints,
        settings, models) is dropped with them, so nothing left in the process talks to a local
        server that is gone; a later invocation is a cold start again."""
        with self._lock:
            for handler in self._handlers.values():
                module = sys.modules.get(getattr(handler, "__module__", "") or "")
                if module is not None:
                    fresh_container(module)
            self._handlers.clear()

    def waited_s(self) -> float:
        """How long this thread's last invocation waited for another to end before it started."""
        return float(getattr(self._waits, "seconds", 0.0))

    def invoke(self, function: FunctionSpec, event: Any, environment: Mapping[str, str]) -> Any:
        """Run the handler once; returns its JSON result or raises an InvocationError."""
        payload = json.loads(json.dumps(event))  # the handler gets a copy, as it would from Lambda
        queued = self._clock()
        with self._lock, applied_environment(environment), lambda_cpu_count(lambda_vcpus(function.memory_mb)):
            self._waits.seconds = self._clock() - queued
            handler = self._handlers.get(function.logical_id)
            if handler is None:  # cold start: import with the function's environment in place
                handler = self._loader(function)
                self._handlers[function.logical_id] = handler
            own_observability()
            context = lambda_context(function, self._region)
            started = time.monotonic()
            try:
                result = handler(payload, context)
            except Exception as exc:
                print("".join(traceback.format_exception(exc)), file=sys.stderr, end="")
                # As Lambda's runtime reports it (seen under sam local): the handler's own frames,
                # one "  File ..., line N, in name\n    code\n" each, without this runner's frame,
                # the "Traceback" header or the exception line, which errorType/errorMessage carry.
                frames = traceback.format_list(traceback.extract_tb(exc.__traceback__)[1:])
                raise FunctionFailed(type(exc).__name__, str(exc), frames, context.aws_request_id) from exc
            elapsed = time.monotonic() - started
        if elapsed > function.timeout_s:
            # Lambda would have stopped it; locally it ran to the end, but the result is discarded.
            raise FunctionFailed("Sandbox.Timedout", f"Task timed out after {function.timeout_s:.2f} seconds")
        try:
            return json.loads(json.dumps(result))
        except (TypeError, ValueError) as exc:
            raise FunctionFailed("Runtime.MarshalError", f"Unable to marshal response: {exc}") from exc
