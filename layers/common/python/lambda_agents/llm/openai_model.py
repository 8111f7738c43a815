"""The real openai client behind the ChatModel port: the only module that imports openai, and the
only one that knows OpenAI's request and answer shapes (``response_format``, ``tools``,
``tool_choice``, the stream's chunks, the ``x-ratelimit-*`` headers, the SDK's errors).

Answers are streamed by default (``stream=True`` with ``stream_options.include_usage``): a real
model writes 35-80 tokens/s, so a whole answer may take a minute, and only a stream lets the
call be bounded part by part and closed when the caller's time is up. How each call is paced
(its rate-limit turn, the first token, stalls, the deadline, an answer arriving too slowly) is the
``pacing.Pacer``'s: this module gives it the connection's socket, each chunk and each answer's
headers, and maps what it decides to nothing but the SDK's arguments (the read timeout). What a
cut or dropped stream had delivered comes back as the error's ``partial``, with its usage counted
from the chunks received (``Usage.estimated``). ``stream=False`` (``OPENAI_STREAM=false``) serves
OpenAI-compatible servers that cannot stream.
Each piece of a streamed answer is told to the request's ``AnswerListener`` as it arrives (a
whole answer, once), so a caller can show its words while it is written.

The client's own retries are off (``max_retries=0``): the engine owns retries, backoff and the
deadline, and the SDK's retries with Retry-After waits of up to minutes would multiply with ours
and outlive the Lambda.

The answer's budget goes out as ``max_completion_tokens`` (reasoning models refuse
``max_tokens``); an OpenAI-compatible server that only knows ``max_tokens`` gets that instead
(``OPENAI_TOKEN_LIMIT_FIELD=max_tokens``).

Each request is one ``chat <model>`` span when tracing is on (``observability.model_call_span``:
model, token counts and finish reason, never the messages or the answer).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

import openai

from ..observability import model_call_span
from .api_key import ApiKeySource
from .errors import (
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
    RequestRejected,
)
from .openai_stream import StreamedAnswer, usage_of
from .pacing import PacedCall, Pacer, StreamWatch
from .policy import StreamTimeouts
from .rate_budget import RateBudget
from .speeds import DEFAULT_PRIOR, SpeedEstimate
from .types import ChatRequest, ChatResponse, HeardAnswer, ResponseTiming, ToolCall, estimate_tokens

TokenLimitField = Literal["max_completion_tokens", "max_tokens"]
_RATE_LIMIT_PREFIX = "x-ratelimit-"


@dataclass(frozen=True)
class OpenAIModelSettings:
    """One model as the adapter reaches it. ``api_key``: the key, or where to read it
    (``ApiKeySource``): read at the first call, so an unreadable key fails that call
    (``ProviderAuthError``), not the function that holds the model; a key the provider refuses is
    read once more past its cache, and the call retried once with a rotated one. ``base_url``:
    None for OpenAI's; ``timeouts``: of the stream's parts (``StreamTimeouts``); ``stream``: False
    for a compatible server that cannot stream; ``token_limit_field``: the field the answer's
    budget goes out as; ``speed_prior``: the model's pace before this container has timed it."""

    api_key: str | ApiKeySource
    model: str
    base_url: str | None = None
    timeouts: StreamTimeouts | None = None
    stream: bool = True
    token_limit_field: TokenLimitField = "max_completion_tokens"
    speed_prior: SpeedEstimate = DEFAULT_PRIOR


class OpenAIChatModel:
    """The ``ChatModel`` of one OpenAI (or compatible) model (``OpenAIModelSettings``). Each call is
    paced by the ``pacer`` its ``rate_budget`` (this container's share of the account's rate limit)
    and ``clock`` make; ``client``: an SDK client to use instead of one built with the key."""

    def __init__(
        self,
        settings: OpenAIModelSettings,
        *,
        rate_budget: RateBudget | None = None,
        client: openai.OpenAI | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._model = settings.model
        self._stream = settings.stream
        self._token_limit_field = settings.token_limit_field
        self.pacer = Pacer(settings.timeouts, rate_budget, clock)
        self.speed_prior = settings.speed_prior
        key = settings.api_key
        self._keys = key if isinstance(key, ApiKeySource) else ApiKeySource(key=key)
        self._base_url = settings.base_url
        self._client: openai.OpenAI | None = client
        self._client_key: str | None = None
        self._client_lock = threading.Lock()

    @property
    def rate_budget(self) -> RateBudget | None:
        """This container's share of the account's rate limit (the pacer's)."""
        return self.pacer.rate_budget

    @rate_budget.setter
    def rate_budget(self, budget: RateBudget | None) -> None:
        self.pacer.rate_budget = budget

    def _current_client(self) -> openai.OpenAI:
        """The client, built with the key on first use (ProviderAuthError when it cannot be read)."""
        with self._client_lock:
            if self._client is None:
                self._client_key = self._keys.get()
                self._client = openai.OpenAI(api_key=self._client_key, base_url=self._base_url, max_retries=0)
            return self._client

    def _key_rotated(self) -> bool:
        """After the provider refused the key: a newer one from the parameter, the client rebuilt with it."""
        with self._client_lock:
            if self._client_key is None:
                return False
            fresh = self._keys.renewed(self._client_key)
            if fresh is None:
                return False
            self._client_key = fresh
            self._client = openai.OpenAI(api_key=fresh, base_url=self._base_url, max_retries=0)
            return True

    @property
    def model_name(self) -> str:
        return self._model

    def complete(self, request: ChatRequest) -> ChatResponse:
        kwargs = openai_arguments(request, self._model, self._token_limit_field)
        prompt_tokens = _prompt_tokens(kwargs)
        with self.pacer.call(request, prompt_tokens) as call:
            try:
                return self._sent(kwargs, request, call, prompt_tokens)
            except ProviderAuthError:
                if not self._key_rotated():
                    raise
                return self._sent(kwargs, request, call, prompt_tokens)  # once, with the rotated key

    def _sent(self, kwargs: dict[str, Any], request: ChatRequest, call: PacedCall, prompt_tokens: int) -> ChatResponse:
        with model_call_span(
            provider="openai",
            model=self._model,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            purpose=request.purpose,
        ) as span:
            listener = request.heard()
            if listener is not None:
                listener.attempt_started()
            if self._stream:
                response = self._streamed(kwargs, call, prompt_tokens, listener)
            else:
                response = self._whole(kwargs, call)
                if listener is not None:
                    listener.whole(response)
            span.record_response(
                response_model=response.model,
                finish_reason=response.finish_reason,
                input_tokens=response.usage.prompt_tokens,
                output_tokens=response.usage.completion_tokens,
            )
        return response

    def _streamed(
        self, kwargs: dict[str, Any], call: PacedCall, prompt_tokens: int, listener: HeardAnswer | None
    ) -> ChatResponse:
        watch = call.stream()
        kwargs = {
            **kwargs,
            "stream": True,
            "stream_options": {"include_usage": True},
            "timeout": _timeout(watch.limits, watch.header_read_s),
        }
        answer = StreamedAnswer(self._model, prompt_tokens, int(kwargs.get(self._token_limit_field) or 0), listener)
        try:
            stream = self._current_client().chat.completions.create(**kwargs)
        except openai.APIError as error:
            timed_out = isinstance(error, openai.APITimeoutError)
            raise _stream_failure(error, answer, watch, timed_out_before_start=timed_out) from error
        call.limits_seen(_headers_of(stream))
        try:
            watch.start(_socket_of(stream), getattr(stream, "close", None))
            for chunk in stream:
                watch.arrived(answer.add(chunk), answer.written_tokens)
        except Exception as error:  # every way a stream ends early is classified
            raise _stream_failure(error, answer, watch) from error
        finally:
            watch.stop()
            stream.close()
        if answer.finish_reason is None:
            raise ProviderConnectionError("the stream ended before the answer did", answer.partial(watch.timing()))
        return answer.response(watch.timing())

    def _whole(self, kwargs: dict[str, Any], call: PacedCall) -> ChatResponse:
        """For servers that cannot stream."""
        watch = call.whole()
        try:
            raw = self._current_client().chat.completions.with_raw_response.create(
                **kwargs, timeout=_timeout(watch.limits, watch.read_s)
            )
            call.limits_seen(_limit_headers(raw.headers.items()))
            completion = raw.parse()
        except openai.APIError as error:
            translated = translate_error(error)
            raise (watch.cut(translated) or translated) from error
        return response_from_completion(completion, self._model, watch.timing())


def response_from_completion(completion: Any, model: str, timing: ResponseTiming | None) -> ChatResponse:
    """A whole ``chat.completion`` (a synchronous answer, or one line of a batch job's output)."""
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
        usage=usage_of(completion.usage),
        model=completion.model or model,
        timing=timing,
        service_tier=getattr(completion, "service_tier", None),
    )


def openai_arguments(request: ChatRequest, model: str, token_limit_field: TokenLimitField) -> dict[str, Any]:
    """The provider-neutral request in OpenAI's chat.completions words."""
    kwargs: dict[str, Any] = {"model": model, "messages": request.messages, token_limit_field: request.max_tokens}
    if request.temperature is not None:
        kwargs["temperature"] = request.temperature
    parameters = request.parameters
    if parameters.json_output is not None:
        output = parameters.json_output
        kwargs["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": output.name, "strict": output.strict, "schema": output.schema},
        }
    if parameters.tools:
        kwargs["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                    "strict": tool.strict,
                },
            }
            for tool in parameters.tools
        ]
        if parameters.parallel_tool_calls is not None:
            kwargs["parallel_tool_calls"] = parameters.parallel_tool_calls
    if parameters.tool_choice is not None:
        choice = parameters.tool_choice
        kwargs["tool_choice"] = (
            choice if choice in ("auto", "required", "none") else {"type": "function", "function": {"name": choice}}
        )
    if parameters.service_tier is not None:
        kwargs["service_tier"] = parameters.service_tier
    return kwargs


def _prompt_tokens(kwargs: dict[str, Any]) -> int:
    """The request's input as the provider counts it: the messages and any schema or tools sent with them."""
    read = [kwargs["messages"], kwargs.get("tools") or [], kwargs.get("response_format") or {}]
    return estimate_tokens(json.dumps(read, ensure_ascii=False, default=str))


def _timeout(limits: StreamTimeouts, read_s: float) -> openai.Timeout:
    connect = min(limits.connect_s, max(read_s, 0.001))
    return openai.Timeout(connect=connect, read=max(read_s, 0.001), write=limits.connect_s, pool=connect)


def _stream_failure(
    error: Exception, answer: StreamedAnswer, watch: StreamWatch, *, timed_out_before_start: bool = False
) -> ProviderError:
    """The provider-neutral error for a stream that ended early, with what it had delivered: the
    pacing's when it ended the stream, else the SDK's error translated."""
    partial = answer.partial(watch.timing())
    cut = watch.cut(partial, timed_out_before_start=timed_out_before_start)
    if cut is not None:
        return cut
    if isinstance(error, openai.APIError):
        translated = translate_error(error)
        translated.partial = partial if answer.token_chunks else None
        return translated
    return ProviderConnectionError(f"the stream failed: {type(error).__name__}: {error}", partial)


def _socket_of(stream: Any) -> socket.socket | None:
    """The connection's socket under the SDK's stream (httpx's network stream), for the pacing to
    shut down; None with another transport or a test double."""
    response = getattr(stream, "response", None)
    extensions = getattr(response, "extensions", None) or {}
    network = extensions.get("network_stream")
    sock = network.get_extra_info("socket") if network is not None else None
    return sock if isinstance(sock, socket.socket) else None


def translate_error(error: openai.APIError) -> ProviderError:
    """openai SDK errors -> the provider-neutral errors the engine and domains act on."""
    if isinstance(error, openai.APITimeoutError):
        return ProviderTimeout(f"request timed out: {error}")
    if isinstance(error, openai.APIConnectionError):
        return ProviderConnectionError(f"connection failed: {error}")
    if isinstance(error, openai.RateLimitError):
        return RateLimited(f"rate limited (429): {error.message}", _retry_after_s(error), _rate_limits(error))
    if isinstance(error, (openai.AuthenticationError, openai.PermissionDeniedError)):
        return ProviderAuthError(f"not authorised ({error.status_code}): {error.message}")
    if isinstance(error, openai.APIStatusError):
        if error.status_code >= 500:
            return ProviderUnavailable(f"provider error ({error.status_code}): {error.message}")
        if error.status_code == 429:
            return RateLimited(f"rate limited (429): {error.message}", _retry_after_s(error), _rate_limits(error))
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


def _headers_of(stream: Any) -> dict[str, str]:
    """A streamed answer's ``x-ratelimit-*`` headers (names without the prefix); none when the
    stream carries no response (a test double)."""
    response = getattr(stream, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return {}
    return _limit_headers(headers.items())


def _rate_limits(error: openai.APIStatusError) -> dict[str, str]:
    return _limit_headers(error.response.headers.items())


def _limit_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    return {
        name.lower().removeprefix(_RATE_LIMIT_PREFIX): value
        for name, value in headers
        if name.lower().startswith(_RATE_LIMIT_PREFIX)
    }
