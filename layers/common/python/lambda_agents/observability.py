"""The Powertools logger, tracer and metrics every function shares.

Log policy: no secret and no raw user text at INFO; message text may appear only at DEBUG.
Locally the runner sets POWERTOOLS_TRACE_DISABLED and POWERTOOLS_METRICS_NAMESPACE.

In Lambda one process runs one function, so the service name read at import is the function's.
The local runner hosts every function in one process and calls ``bind_to_environment`` before
each invocation, so each function's logs and metrics carry its own POWERTOOLS_SERVICE_NAME.
"""

from __future__ import annotations

import os
import time

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

DEFAULT_SERVICE = "lambda-agents"
DEFAULT_NAMESPACE = "LambdaAgents"

os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", DEFAULT_NAMESPACE)

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", DEFAULT_SERVICE))
tracer = Tracer()
metrics = Metrics()


def bind_to_environment() -> None:
    """Point the shared logger and metrics at the service and namespace the environment names now."""
    service = os.environ.get("POWERTOOLS_SERVICE_NAME") or DEFAULT_SERVICE
    logger.service = service
    formatter = logger.registered_formatter
    if isinstance(formatter, LambdaPowertoolsFormatter):
        # keys_combined is what clear_state (inject_lambda_context(clear_state=True)) restores.
        formatter.keys_combined["service"] = service
        formatter.append_keys(service=service)
    metrics.service = service
    metrics.namespace = os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or DEFAULT_NAMESPACE


def elapsed_ms(started: float) -> int:
    """Milliseconds since ``started``, a ``time.perf_counter()`` reading: durations in logs and records."""
    return int((time.perf_counter() - started) * 1000)
