"""The Powertools logger and metrics every function shares, and the spans of model calls.

Log policy: no secret and no raw user text at INFO; message text may appear only at DEBUG.
Locally the runner sets POWERTOOLS_METRICS_NAMESPACE.

In Lambda one process runs one function, so the service name read at import is the function's.
The local runner hosts every function in one process and calls ``bind_to_environment`` before
each invocation, so each function's logs and metrics carry its own POWERTOOLS_SERVICE_NAME.

Tracing is OpenTelemetry and opt-in per deployment (the template's ``OtelLayerArn``): the ADOT
Lambda layer then wraps every handler (the invocation's span, AWS SDK calls, export to X-Ray)
and brings the opentelemetry packages. This module adds one span per model call with the GenAI
semantic conventions' attributes (model, token counts, finish reasons, the error's type), never a
prompt, an answer or an error message. Off (``OTEL_SDK_DISABLED=true``, the template's default)
or where opentelemetry is not installed, nothing of it is imported: no tracing SDK at cold start.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

DEFAULT_SERVICE = "lambda-agents"
DEFAULT_NAMESPACE = "LambdaAgents"

os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", DEFAULT_NAMESPACE)

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", DEFAULT_SERVICE))
metrics = Metrics()

TRACER_NAME = "lambda_agents"


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


def tracing_enabled() -> bool:
    """OpenTelemetry's own switch: ``OTEL_SDK_DISABLED=true`` turns every signal off."""
    return os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() != "true"


@cache
def _tracer() -> Tracer | None:
    if not tracing_enabled():
        return None
    try:
        from opentelemetry import trace
    except ImportError:  # tracing switched on without the ADOT layer: nothing to report to
        return None
    return trace.get_tracer(TRACER_NAME)


class ModelCallSpan:
    """What a model adapter records about one call; a no-op while tracing is off."""

    def __init__(self, span: Span | None = None) -> None:
        self._span = span

    def record_response(
        self, *, response_model: str, finish_reason: str, input_tokens: int, output_tokens: int
    ) -> None:
        if self._span is None:
            return
        self._span.set_attributes(
            {
                "gen_ai.response.model": response_model,
                "gen_ai.response.finish_reasons": [finish_reason],
                "gen_ai.usage.input_tokens": input_tokens,
                "gen_ai.usage.output_tokens": output_tokens,
            }
        )


@contextmanager
def model_call_span(
    *, provider: str, model: str, max_tokens: int, temperature: float | None, purpose: str
) -> Iterator[ModelCallSpan]:
    """A CLIENT span ``chat <model>`` around one provider request (GenAI semantic conventions).

    A failure sets ``error.type`` to the exception's class name; its message, which may quote
    what was sent, is not recorded.
    """
    tracer = _tracer()
    if tracer is None:
        yield ModelCallSpan()
        return
    from opentelemetry.trace import SpanKind, Status, StatusCode

    attributes: dict[str, str | int | float] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.system": provider,  # the name older backends read
        "gen_ai.request.model": model,
        "gen_ai.request.max_tokens": max_tokens,
        "lambda_agents.purpose": purpose,
    }
    if temperature is not None:
        attributes["gen_ai.request.temperature"] = temperature
    with tracer.start_as_current_span(
        f"chat {model}",
        kind=SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield ModelCallSpan(span)
        except BaseException as error:
            span.set_attribute("error.type", type(error).__name__)
            span.set_status(Status(StatusCode.ERROR))
            raise
