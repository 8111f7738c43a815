"""The real openai client behind the ChatModel port: the only module that imports openai, and the
only one that knows OpenAI's request shapes (``response_format``, ``tools``, ``tool_choice``).

Answers are streamed by default (``stream=True`` with ``stream_options.include_usage``): a real
model writes 35-80 tokens/s, so a whole answer may take a minute, and only a stream lets the
call be bounded part by part (``policy.StreamTimeouts``): connecting, the first token, a stall
between two chunks, and the whole answer by the caller's deadline (``Pacing.answer_by``). A
watchdog thread shuts the connection's socket down when one of them is overdue, so the provider
stops generating (and billing) at once, and, for a caller that asks for it (``cut_when_late``),
an answer whose pace shows it cannot be done by the deadline (``speeds.PaceForecast`` against the
request's ``planned_tokens``) is closed as soon as that shows; a non-streamed request the client abandons is still
generated and billed in full. What a cut or dropped stream had delivered comes back as the
error's ``partial``, with its usage counted from the chunks received (``Usage.estimated``).
``stream=False`` (``OPENAI_STREAM=false``) serves OpenAI-compatible servers that cannot stream:
the whole answer is then bounded by one read timeout, the time left.

The client's own retries are off (``max_retries=0``): the engine owns retries, backoff and the
deadline, and the SDK's retries with Retry-After waits of up to minutes would multiply with ours
and outlive the Lambda.

With a rate budget (``rate_budget``: this container's share of the account's requests and tokens
per minute, configured or learned), a request takes its place before it is sent: it waits its turn
while the wait still leaves its planned answer time before the deadline, else it is not sent
(``RateShareSpent``, with the wait as its retry-after). Every answer's and every 429's
``x-ratelimit-*`` headers go to the budget (``RateBudget.resync``): a limit nobody configured is
learned from them, others spending the same account slow the container down before the provider
refuses it, and room the account shows moves waiting turns earlier. A 429 that arrives anyway
holds the container's budget back for its retry-after.

The answer's budget goes out as ``max_completion_tokens`` (reasoning models refuse
``max_tokens``); an OpenAI-compatible server that only knows ``max_tokens`` gets that instead
(``OPENAI_TOKEN_LIMIT_FIELD=max_tokens``).

Each request is one ``chat <model>`` span when tracing is on (``observability.model_call_span``:
model, token counts and finish reason, never the messages or the answer).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import openai

from ..observability import model_call_span
from .api_key import ApiKeySource
from .errors import (
    AnswerCut,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
    RateShareSpent,
    RequestRejected,
)
from .policy import StreamTimeouts
from .rate_budget import RateBudget, Reservation
from .speeds import DEFAULT_PRIOR, PaceForecast, SpeedEstimate
from .types import ChatRequest, ChatResponse, ResponseTiming, ToolCall, Usage, estimate_tokens, tokens_in_bytes

TokenLimitField = Literal["max_completion_tokens", "max_tokens"]
CUT = "cut"  # finish_reason of a partial answer: it ended before the model finished it
_RATE_LIMIT_PREFIX = "x-ratelimit-"
# How long a call without a deadline may wait for its rate-limit turn, and how long a 429 without
# retry-after holds the budget back.
MAX_PACING_WAIT_S = 60.0
DEFAULT_HOLD_S = 1.0


class OpenAIChatModel:
    """``api_key``: the key, or where to read it (``ApiKeySource``): read at the first call, so an
    unreadable key fails that call (``ProviderAuthError``), not the function that holds the model;
    a key the provider refuses is read once more past its cache, and the call retried once with a
    rotated one."""

    def __init__(
        self,
        api_key: str | ApiKeySource,
        model: str,
        base_url: str | None = None,
        *,
        timeouts: StreamTimeouts | None = None,
        stream: bool = True,
        client: openai.OpenAI | None = None,
        token_limit_field: TokenLimitField = "max_completion_tokens",
        speed_prior: SpeedEstimate = DEFAULT_PRIOR,
        rate_budget: RateBudget | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._model = model
        self._timeouts = timeouts or StreamTimeouts()
        self._stream = stream
        self._token_limit_field = token_limit_field
        self._clock = clock
        self.rate_budget = rate_budget
        self.speed_prior = speed_prior
        self._keys = api_key if isinstance(api_key, ApiKeySource) else ApiKeySource(key=api_key)
        self._base_url = base_url
        self._client: openai.OpenAI | None = client
        self._client_key: str | None = None
        self._client_lock = threading.Lock()

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
        budget = self.rate_budget
        turn = None if budget is None else self._take_turn(budget, kwargs, request)
        try:
            try:
                return self._sent(kwargs, request, turn)
            except ProviderAuthError:
                if not self._key_rotated():
                    raise
                return self._sent(kwargs, request, turn)  # once, with the rotated key
        except RateLimited as refused:
            if budget is not None:
                if turn is not None:
                    turn.cancel()  # the account does not count a request it refused
                budget.resync(refused.limits)
                budget.hold(refused.retry_after_s or DEFAULT_HOLD_S)
            raise
        finally:
            if budget is not None and turn is not None:
                budget.land(turn)

    def _take_turn(self, budget: RateBudget, kwargs: dict[str, Any], request: ChatRequest) -> Reservation:
        """Wait for the request's place in the container's share of the rate limit, or raise
        ``RateShareSpent`` when waiting would not leave the answer its planned time."""
        reservation = budget.reserve(_prompt_tokens(kwargs) + request.max_tokens)
        left = _seconds_left(request)
        may_wait = MAX_PACING_WAIT_S if left is None else left - (request.pacing.planned_s or 0.0)
        still = budget.wait_for_turn(reservation, may_wait)
        if still is not None:
            reservation.cancel()
            share = budget.share
            raise RateShareSpent(
                f"not sent: this container's share of the rate limit ({share.tokens_per_minute:,.0f} tokens, "
                f"{share.requests_per_minute:,.0f} requests a minute) has room for it in {still:.1f} s, "
                f"{may_wait:.1f} s could be waited",
                retry_after_s=still,
            )
        return reservation

    def _sent(self, kwargs: dict[str, Any], request: ChatRequest, turn: Reservation | None) -> ChatResponse:
        with model_call_span(
            provider="openai",
            model=self._model,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            purpose=request.purpose,
        ) as span:
            response = self._streamed(kwargs, request, turn) if self._stream else self._whole(kwargs, request, turn)
            span.record_response(
                response_model=response.model,
                finish_reason=response.finish_reason,
                input_tokens=response.usage.prompt_tokens,
                output_tokens=response.usage.completion_tokens,
            )
        return response

    # -- streamed --------------------------------------------------------------------------------

    def _streamed(self, kwargs: dict[str, Any], request: ChatRequest, turn: Reservation | None) -> ChatResponse:
        left = _seconds_left(request)
        limits = self._timeouts.for_first_token(request.pacing.expected_first_token_s)
        # The header phase waits for the first token on some servers: bounded like it, and by the
        # deadline; the watchdog bounds everything after the headers.
        read = min(limits.first_token_s, left) if left is not None else limits.first_token_s
        kwargs = {
            **kwargs,
            "stream": True,
            "stream_options": {"include_usage": True},
            "timeout": _timeout(limits, read),
        }
        answer = _StreamedAnswer(self._model, _prompt_tokens(kwargs), self._clock)
        forecast = _forecast(request, self._clock(), left)
        watchdog = _Watchdog(
            limits,
            left,
            self._clock,
            None if forecast is None else forecast.first_token_by(),
            _silence_waited_until(request, self._clock(), left, limits),
        )
        try:
            stream = self._current_client().chat.completions.create(**kwargs)
        except openai.APIError as error:
            if isinstance(error, openai.APITimeoutError) and left is not None and left <= limits.first_token_s:
                raise AnswerCut("the deadline passed before the answer started", answer.partial()) from error
            raise _classify(error, answer, watchdog, request) from error
        if self.rate_budget is not None:
            self.rate_budget.resync(_headers_of(stream), turn)
        try:
            watchdog.watch(stream)
            for chunk in stream:
                token = answer.add(chunk)
                watchdog.beat(token)
                if token and forecast is not None:
                    answer.check_pace(forecast)
        except Exception as error:  # every way a stream ends early is classified
            raise _classify(error, answer, watchdog, request) from error
        finally:
            watchdog.stop()
            stream.close()
        if answer.finish_reason is None:
            raise ProviderConnectionError("the stream ended before the answer did", answer.partial(CUT))
        return answer.response()

    # -- whole (for servers that cannot stream) --------------------------------------------------

    def _whole(self, kwargs: dict[str, Any], request: ChatRequest, turn: Reservation | None) -> ChatResponse:
        left = _seconds_left(request)
        read = left if left is not None else self._timeouts.unbounded_answer_s
        started = self._clock()
        try:
            raw = self._current_client().chat.completions.with_raw_response.create(
                **kwargs, timeout=_timeout(self._timeouts, read)
            )
            if self.rate_budget is not None:
                self.rate_budget.resync(_limit_headers(raw.headers.items()), turn)
            completion = raw.parse()
        except openai.APIError as error:
            translated = translate_error(error)
            if isinstance(translated, ProviderTimeout) and left is not None and read >= left:
                # A non-streamed answer cannot be closed: the provider finishes and bills it anyway.
                raise AnswerCut(f"the deadline passed before the whole answer came ({read:.1f} s)") from error
            raise translated from error
        elapsed = max(0.0, self._clock() - started)
        return response_from_completion(
            completion, self._model, ResponseTiming(first_token_s=0.0, total_s=elapsed, streamed=False)
        )


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
        usage=_usage(completion.usage),
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


def _silence_waited_until(
    request: ChatRequest, now: float, seconds_left: float | None, limits: StreamTimeouts
) -> float | None:
    """Until when a started stream's silence is waited out: as long as what is left after it still
    holds one more whole attempt as this one was planned (``planned_s``) and a stall limit's
    margin for the retry's wait. A caller with minutes (a worker) rides out a provider's pause of
    tens of seconds instead of paying for the answer again from its first token; a request with
    seconds keeps the stall limit, and the retry its time."""
    if seconds_left is None or request.pacing.planned_s is None:
        return None
    return now + seconds_left - request.pacing.planned_s - limits.stall_s


def _prompt_tokens(kwargs: dict[str, Any]) -> int:
    """The request's input as the provider counts it: the messages and any schema or tools sent with them."""
    read = [kwargs["messages"], kwargs.get("tools") or [], kwargs.get("response_format") or {}]
    return estimate_tokens(json.dumps(read, ensure_ascii=False, default=str))


def _forecast(request: ChatRequest, now: float, seconds_left: float | None) -> PaceForecast | None:
    pacing = request.pacing
    if seconds_left is None or not pacing.cut_when_late or pacing.planned_tokens is None:
        return None
    return PaceForecast(pacing.planned_tokens, request.max_tokens, now, now + seconds_left, pacing.planned_tokens_per_s)


class _PaceTooSlow(Exception):
    """The stream's pace shows the answer cannot be done by the deadline: it is cut now."""


def _seconds_left(request: ChatRequest) -> float | None:
    answer_by = request.pacing.answer_by
    return None if answer_by is None else max(0.0, answer_by.remaining_s())


def _timeout(limits: StreamTimeouts, read_s: float) -> openai.Timeout:
    connect = min(limits.connect_s, max(read_s, 0.001))
    return openai.Timeout(connect=connect, read=max(read_s, 0.001), write=limits.connect_s, pool=connect)


@dataclass
class _ToolCallParts:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _StreamedAnswer:
    """The answer put together chunk by chunk, with when its first and last tokens came."""

    def __init__(self, model: str, prompt_tokens: int, clock: Callable[[], float]) -> None:
        self._model = model
        self._prompt_tokens = prompt_tokens
        self._clock = clock
        self._started = clock()
        self.first_token_at: float | None = None
        self.last_token_at: float | None = None
        self.content: list[str] = []
        self.refusal: list[str] = []
        self.tools: dict[int, _ToolCallParts] = {}
        self.finish_reason: str | None = None
        self.usage: Any = None
        self.model: str | None = None
        self.service_tier: str | None = None
        self.token_chunks = 0
        self.written_bytes = 0

    def add(self, chunk: Any) -> bool:
        """Take one chunk; True when it carried answer tokens (not the role or usage chunk)."""
        self.model = getattr(chunk, "model", None) or self.model
        self.service_tier = getattr(chunk, "service_tier", None) or self.service_tier
        if getattr(chunk, "usage", None) is not None:
            self.usage = chunk.usage
        carried = False
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "index", 0) != 0:
                continue
            delta = choice.delta
            if delta is not None:
                carried = self._take(delta)
            if choice.finish_reason is not None:
                self.finish_reason = str(choice.finish_reason)
        if carried:
            now = self._clock()
            self.first_token_at = self.first_token_at if self.first_token_at is not None else now
            self.last_token_at = now
            self.token_chunks += 1
        return carried

    def check_pace(self, forecast: PaceForecast) -> None:
        """Raises ``_PaceTooSlow`` when the answer, at the pace it is arriving, cannot be done in time."""
        if self.first_token_at is None or self.last_token_at is None:
            return
        late = forecast.late(self.written_tokens, self.first_token_at, self.last_token_at)
        if late is not None:
            raise _PaceTooSlow(late)

    def _take(self, delta: Any) -> bool:
        carried = False
        if getattr(delta, "content", None):
            self.content.append(delta.content)
            self.written_bytes += len(delta.content.encode("utf-8"))
            carried = True
        if getattr(delta, "refusal", None):
            self.refusal.append(delta.refusal)
            self.written_bytes += len(delta.refusal.encode("utf-8"))
            carried = True
        for call in getattr(delta, "tool_calls", None) or []:
            parts = self.tools.setdefault(int(getattr(call, "index", 0) or 0), _ToolCallParts())
            parts.id = getattr(call, "id", None) or parts.id
            function = getattr(call, "function", None)
            if function is not None:
                parts.name = getattr(function, "name", None) or parts.name
                if getattr(function, "arguments", None):
                    parts.arguments.append(function.arguments)
                    self.written_bytes += len(function.arguments.encode("utf-8"))
                    carried = True
        return carried

    def _calls(self) -> tuple[ToolCall, ...]:
        return tuple(
            ToolCall(parts.id, parts.name, "".join(parts.arguments))
            for _, parts in sorted(self.tools.items())
            if parts.name
        )

    def _timing(self) -> ResponseTiming | None:
        if self.first_token_at is None or self.last_token_at is None:
            return None
        return ResponseTiming(self.first_token_at - self._started, self.last_token_at - self._started)

    @property
    def written_tokens(self) -> int:
        """The tokens that have arrived: a chunk is about one token from OpenAI; a server that sends
        several per chunk is read by the size of what it wrote (``estimate_tokens``)."""
        return max(self.token_chunks, tokens_in_bytes(self.written_bytes))

    def _counted_usage(self) -> Usage:
        """What the provider billed for what arrived, when it did not say (a cut stream)."""
        return Usage(self._prompt_tokens, self.written_tokens, estimated=True)

    def _build(self, finish_reason: str, usage: Usage) -> ChatResponse:
        calls = self._calls()
        content = "".join(self.content) if self.content or not (calls or self.refusal) else None
        return ChatResponse(
            content=content,
            finish_reason=finish_reason,
            refusal="".join(self.refusal) or None,
            tool_calls=calls,
            usage=usage,
            model=self.model or self._model,
            timing=self._timing(),
            service_tier=self.service_tier,
        )

    def response(self) -> ChatResponse:
        usage = _usage(self.usage) if self.usage is not None else self._counted_usage()
        return self._build(self.finish_reason or CUT, usage)

    def partial(self, finish_reason: str = CUT) -> ChatResponse:
        return self._build(finish_reason, self._counted_usage())


_Due = Literal["first_token", "first_token_late", "stall", "deadline"]


class _Watchdog:
    """Shuts a stream's socket down when its first token, its next chunk or the deadline is
    overdue, or (``first_token_by``, a caller that asked for it) a first token so late that the
    planned answer could no longer be written in time. A started stream's silence is cut after
    the stall limit, or at ``silence_waited_until`` when that is later: a caller with the time
    waits out a provider's pause rather than pay for the answer again. Shutting down (not
    closing) wakes the reader blocked in ``recv`` at once and sends the FIN, so the provider sees
    the client gone and stops generating."""

    def __init__(
        self,
        limits: StreamTimeouts,
        seconds_left: float | None,
        clock: Callable[[], float],
        first_token_by: float | None = None,
        silence_waited_until: float | None = None,
    ) -> None:
        self._limits = limits
        self._clock = clock
        self._started = clock()
        self._deadline_at = None if seconds_left is None else self._started + seconds_left
        self._first_token_by = first_token_by
        self._silence_waited_until = silence_waited_until
        self.silent_s = 0.0  # how long the stream had been silent when a stall cut it
        self._last_beat: float | None = None  # the last chunk after the first token
        self._stopped = threading.Event()
        self._replan = threading.Event()  # set when what is due changes: the first token came, or stop
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._closer: Callable[[], None] | None = None
        self.fired: _Due | None = None

    @property
    def limits(self) -> StreamTimeouts:
        return self._limits

    def watch(self, stream: Any) -> None:
        response = getattr(stream, "response", None)
        extensions = getattr(response, "extensions", None) or {}
        network = extensions.get("network_stream")
        sock = network.get_extra_info("socket") if network is not None else None
        self._socket = sock if isinstance(sock, socket.socket) else None
        self._closer = getattr(stream, "close", None)
        self._thread = threading.Thread(target=self._run, name="llm-stream-watchdog", daemon=True)
        self._thread.start()

    def beat(self, token: bool) -> None:
        with self._lock:
            first = token and self._last_beat is None
            if token or self._last_beat is not None:
                self._last_beat = self._clock()
        if first:
            # The watchdog sleeps until the first token's limit; from now on the (shorter) stall
            # limit counts, so it must plan again, or a stall early in the answer goes unseen.
            self._replan.set()

    def stop(self) -> None:
        self._stopped.set()
        self._replan.set()

    def overdue(self) -> tuple[float, _Due]:
        """When the stream is next due to be cut, and why."""
        with self._lock:
            last = self._last_beat
        due: float
        why: _Due
        if last is None:
            due, why = self._started + self._limits.first_token_s, "first_token"
            if self._first_token_by is not None and self._first_token_by < due:
                due, why = self._first_token_by, "first_token_late"
        else:
            due, why = last + self._limits.stall_s, "stall"
            if self._silence_waited_until is not None and self._silence_waited_until > due:
                due = self._silence_waited_until
        if self._deadline_at is not None and self._deadline_at <= due:
            return self._deadline_at, "deadline"
        return due, why

    def _run(self) -> None:
        while not self._stopped.is_set():
            due, why = self.overdue()
            wait = due - self._clock()
            if wait > 0:
                self._replan.wait(wait)
                self._replan.clear()
                continue
            self.fired = why
            with self._lock:
                self.silent_s = self._clock() - (self._last_beat if self._last_beat is not None else self._started)
            self._cut()
            return

    def _cut(self) -> None:
        if self._socket is not None:
            try:
                self._socket.shutdown(socket.SHUT_RDWR)
                return
            except OSError:
                pass
        if self._closer is not None:  # no socket at hand (another transport): close the response
            with contextlib.suppress(Exception):  # best effort: the read timeout still bounds the call
                self._closer()


def _classify(error: Exception, answer: _StreamedAnswer, watchdog: _Watchdog, request: ChatRequest) -> ProviderError:
    """The provider-neutral error for a stream that ended early, with what it had delivered."""
    partial = answer.partial()
    left = _seconds_left(request)
    why = watchdog.fired
    if isinstance(error, _PaceTooSlow):
        return AnswerCut(f"cut after {answer.token_chunks} chunk(s): {error}", partial)
    if why == "deadline" or (left is not None and left <= 0):
        return AnswerCut(f"the deadline cut the answer after {answer.token_chunks} chunk(s)", partial)
    if why == "first_token_late":
        return AnswerCut(
            f"no first token while the planned {request.pacing.planned_tokens}-token answer could still be done by the "
            "deadline",
            partial,
        )
    if why == "first_token":
        return ProviderTimeout(f"no first token within {watchdog.limits.first_token_s:g} s", partial)
    if why == "stall":
        return ProviderTimeout(f"the stream stalled for {watchdog.silent_s:.1f} s", partial)
    if isinstance(error, openai.APIError):
        translated = translate_error(error)
        translated.partial = partial if answer.token_chunks else None
        return translated
    return ProviderConnectionError(f"the stream failed: {type(error).__name__}: {error}", partial)


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    details = getattr(usage, "completion_tokens_details", None)
    reasoning = getattr(details, "reasoning_tokens", None) if details is not None else None
    prompt_details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(prompt_details, "cached_tokens", None) if prompt_details is not None else None
    return Usage(
        usage.prompt_tokens or 0, usage.completion_tokens or 0, reasoning or 0, cached_prompt_tokens=cached or 0
    )


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
