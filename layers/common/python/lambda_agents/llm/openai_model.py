"""The real openai client behind the ChatModel port: the only module that imports openai.

The client's own retries are off (``max_retries=0``) and each request's timeout comes from the
engine, which owns retries, backoff and the deadline; otherwise the SDK's two retries with
Retry-After waits of up to minutes would multiply with ours and outlive the Lambda.

The answer's budget goes out as ``max_completion_tokens`` (reasoning models refuse
``max_tokens``); an OpenAI-compatible server that only knows ``max_tokens`` gets that instead
(``OPENAI_TOKEN_LIMIT_FIELD=max_tokens``).

Each request is one ``chat <model>`` span when tracing is on (``observability.model_call_span``:
model, token counts and finish reason, never the messages or the answer).
"""

from __future__ import annotations

from typing import Any, Literal

import openai

from ..observability import model_call_span
from .errors import (
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
    RequestRejected,
)
from .types import ChatRequest, ChatResponse, ToolCall, Usage

TokenLimitField = Literal["max_completion_tokens", "max_tokens"]


class OpenAIChatModel:
    def __init__(
        self,
        api_key: str,
        model: str,
        base_url: str | None = None,
        timeout_s: float = 25.0,
        client: openai.OpenAI | None = None,
        token_limit_field: TokenLimitField = "max_completion_tokens",
    ) -> None:
        self._model = model
        self._token_limit_field = token_limit_field
        self._client = client or openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=0)

    @property
    def model_name(self) -> str:
        return self._model

    def complete(self, request: ChatRequest) -> ChatResponse:
        kwargs: dict[str, Any] = {
            "model": self._model,
            "messages": request.messages,
            self._token_limit_field: request.max_tokens,
        }
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if request.response_format is not None:
            kwargs["response_format"] = request.response_format
        if request.tools is not None:
            kwargs["tools"] = request.tools
        if request.tool_choice is not None:
            kwargs["tool_choice"] = request.tool_choice
        if request.tools and request.parallel_tool_calls is not None:
            kwargs["parallel_tool_calls"] = request.parallel_tool_calls
        if request.timeout_s is not None:
            kwargs["timeout"] = request.timeout_s
        with model_call_span(
            provider="openai",
            model=self._model,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            purpose=request.purpose,
        ) as span:
            response = self._send(kwargs)
            span.record_response(
                response_model=response.model,
                finish_reason=response.finish_reason,
                input_tokens=response.usage.prompt_tokens,
                output_tokens=response.usage.completion_tokens,
            )
        return response

    def _send(self, kwargs: dict[str, Any]) -> ChatResponse:
        try:
            completion = self._client.chat.completions.create(**kwargs)
        except openai.APIError as error:
            raise translate_error(error) from error
        if not completion.choices:
            raise ProviderUnavailable("the provider answered without choices")
        choice = completion.choices[0]
        message = choice.message
        calls = tuple(
            ToolCall(call.id, call.function.name, call.function.arguments)
            for call in (message.tool_calls or [])
            if getattr(call, "function", None) is not None
        )
        return ChatResponse(
            content=message.content,
            finish_reason=str(choice.finish_reason),
            refusal=getattr(message, "refusal", None),
            tool_calls=calls,
            usage=_usage(completion.usage),
            model=completion.model or self._model,
        )


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    details = getattr(usage, "completion_tokens_details", None)
    reasoning = getattr(details, "reasoning_tokens", None) if details is not None else None
    return Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0, reasoning or 0)


def translate_error(error: openai.APIError) -> ProviderError:
    """openai SDK errors -> the provider-neutral errors the engine and domains act on."""
    if isinstance(error, openai.APITimeoutError):
        return ProviderTimeout(f"request timed out: {error}")
    if isinstance(error, openai.APIConnectionError):
        return ProviderConnectionError(f"connection failed: {error}")
    if isinstance(error, openai.RateLimitError):
        return RateLimited(f"rate limited (429): {error.message}", _retry_after_s(error))
    if isinstance(error, (openai.AuthenticationError, openai.PermissionDeniedError)):
        return ProviderAuthError(f"not authorised ({error.status_code}): {error.message}")
    if isinstance(error, openai.APIStatusError):
        if error.status_code >= 500:
            return ProviderUnavailable(f"provider error ({error.status_code}): {error.message}")
        if error.status_code == 429:
            return RateLimited(f"rate limited (429): {error.message}", _retry_after_s(error))
        return RequestRejected(f"request rejected ({error.status_code}): {error.message}")
    return ProviderUnavailable(f"provider error: {error}")


def _retry_after_s(error: openai.APIStatusError) -> float | None:
    headers = error.response.headers
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) / scale)
        except ValueError:
            continue
    return None
