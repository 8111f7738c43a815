"""The Powertools logger, tracer and metrics every function shares.

Log policy: no secret and no raw user text at INFO; message text may appear only at DEBUG.
Locally the runner sets POWERTOOLS_TRACE_DISABLED and POWERTOOLS_METRICS_NAMESPACE.
"""

from __future__ import annotations

import os
import time

from aws_lambda_powertools import Logger, Metrics, Tracer

os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "LambdaAgents")

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "lambda-agents"))
tracer = Tracer()
metrics = Metrics()


def elapsed_ms(started: float) -> int:
    """Milliseconds since ``started``, a ``time.perf_counter()`` reading: durations in logs and records."""
    return int((time.perf_counter() - started) * 1000)
