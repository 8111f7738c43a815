"""With tracing on, every request to the provider is one OpenTelemetry span with the GenAI
semantic conventions' attributes (model, token counts, finish reasons, the error's type), and no
prompt, answer or error text; with tracing off (``OTEL_SDK_DISABLED=true``) there is no span.

In AWS the ADOT layer sets the global tracer provider; here an SDK provider with an in-memory
exporter stands in for it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from lambda_agents import observability
from lambda_agents.llm import ChatRequest
from lambda_agents.llm.errors import RateLimited
from lambda_agents.llm.openai_model import OpenAIChatModel
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from devtools.fake_openai import FakeOpenAIServer, Fault, Reply

pytestmark = pytest.mark.integration

PROMPT = "CANARY-PROMPT: my salary was 4.2 million yen"
ANSWER = "CANARY-ANSWER: noted"
_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)  # the suite runs with tracing off, as deployed by default
    if not isinstance(trace.get_tracer_provider(), TracerProvider):  # the global provider is set once per process
        provider = TracerProvider()  # it reads OTEL_SDK_DISABLED here: the switch is off by now
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    observability._tracer.cache_clear()
    _EXPORTER.clear()
    yield _EXPORTER
    observability._tracer.cache_clear()


def request(max_tokens: int = 300) -> ChatRequest:
    return ChatRequest(
        messages=[{"role": "user", "content": PROMPT}], max_tokens=max_tokens, temperature=0.2, purpose="chat.answer"
    )


def only_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    (span,) = exporter.get_finished_spans()
    return span


def assert_no_text(span: ReadableSpan) -> None:
    recorded = json.dumps({key: str(value) for key, value in (span.attributes or {}).items()}) + span.name
    recorded += json.dumps([event.name for event in span.events])
    assert "CANARY" not in recorded


def test_given_an_answer_then_the_span_has_the_model_the_tokens_and_the_finish_reason_and_no_text(
    spans: InMemorySpanExporter, fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel
) -> None:
    fake_openai.enqueue(Reply(content=ANSWER, prompt_tokens=31, completion_tokens=7))

    openai_chat_model.complete(request())

    span = only_span(spans)
    assert (span.name, span.kind) == ("chat gpt-4o-2024-08-06", SpanKind.CLIENT)
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-4o-2024-08-06",
        "gen_ai.request.max_tokens": 300,
        "gen_ai.request.temperature": 0.2,
        "lambda_agents.purpose": "chat.answer",
        "gen_ai.response.model": "gpt-4o-2024-08-06",
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": 31,
        "gen_ai.usage.output_tokens": 7,
    }
    assert_no_text(span)


def test_given_a_truncated_answer_then_the_finish_reason_says_length(
    spans: InMemorySpanExporter, fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel
) -> None:
    fake_openai.enqueue(Reply(content=ANSWER[:9], finish_reason="length", completion_tokens=300))
    openai_chat_model.complete(request())
    assert only_span(spans).attributes["gen_ai.response.finish_reasons"] == ("length",)  # type: ignore[index]


def test_given_a_provider_error_then_the_span_is_an_error_of_that_type_without_its_message(
    spans: InMemorySpanExporter, fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel
) -> None:
    fake_openai.enqueue(Fault(status=429, retry_after=2, message=f"slow down, you sent {PROMPT}"))

    with pytest.raises(RateLimited):
        openai_chat_model.complete(request())

    span = only_span(spans)
    assert span.status.status_code is StatusCode.ERROR and not span.status.description
    assert (span.attributes or {})["error.type"] == "RateLimited"
    assert "gen_ai.usage.input_tokens" not in (span.attributes or {})
    assert span.events == ()
    assert_no_text(span)


def test_given_tracing_switched_off_then_no_span_is_made(
    spans: InMemorySpanExporter,
    fake_openai: FakeOpenAIServer,
    openai_chat_model: OpenAIChatModel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    observability._tracer.cache_clear()
    fake_openai.enqueue(Reply(content=ANSWER))

    assert openai_chat_model.complete(request()).content == ANSWER
    assert spans.get_finished_spans() == ()
