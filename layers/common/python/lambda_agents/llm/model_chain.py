"""A chain of models behind one ``ChatModel``: when the provider of one fails, the same attempt goes
to the next within the same deadline, and a model that keeps failing is left alone for a while.

What moves the call on is a *provider* failure (5xx, timeout, dropped connection, 429, a key
refused, a request the provider rejects): an answer, valid or not, ends the call, since a
validation failure is the engine's to retry on the same model, which can fix it. The caller's own
deadline cutting an answer (``AnswerCut``) ends it too: nothing more fits.

Each link says how the schema reaches its model (``Strategy``): a model without strict JSON
schema output gets the schema as a forced tool, or in the prompt, and its answer is handed back as
the JSON text the engine reads, so the engine builds one request whichever model answers.

Each link has a ``Breaker`` (as LiteLLM's cooldowns and pydantic-ai's FallbackModel): after
``failures_to_open`` provider failures in a row it opens for ``cooldown_s`` (a 429's Retry-After
when longer), and the chain goes straight to the next model; then one trial call is let through,
which closes it or opens it again. An outage thus costs one timeout per container, not one per
user. A 429 whose headers show the account's own rate limit spent is not such a failure: the
link's rate budget holds its requests for the retry-after, the seconds the account needs, where an
opened breaker would rest it for its whole cool-down and defer every user meanwhile (it still moves
the call on to the next model). When every link is resting the call fails at once with
``ModelsResting`` and the time until the first one may be tried: chat answers its fallback, the
generator defers the user until then.
Each opening and closing is a log line and a metric (``ModelBreakerOpened`` / ``ModelBreakerClosed``
with the model as dimension).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ..observability import logger
from .engine import Strategy, default_schema_instruction, structured_tool
from .errors import AnswerCut, ProviderError, RateLimited, RateShareSpent, RequestRejected
from .json_extraction import extract_json
from .speeds import SpeedEstimate, speed_prior
from .types import TOOL_NAME, ChatModel, ChatRequest, ChatResponse, Message, ModelCall, Usage

DEFAULT_FAILURES_TO_OPEN = 5
DEFAULT_COOLDOWN_S = 30.0


class ModelsResting(ProviderError):
    """Every model of the chain is resting after repeated failures: nothing was sent. Not retried
    in the call; ``retry_after_s``: when the first one may be tried again."""

    kind = "models_resting"
    retryable = False

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


def counts_against(error: ProviderError) -> bool:
    """Whether a failure says the provider is unwell (not the request, not our own pacing: a 429
    whose headers show the account's own limit spent is the rate budget's to wait out, and a
    breaker opened by a burst of them would rest the model far longer than the account needs)."""
    if isinstance(error, RateLimited) and error.account_limit_reached:
        return False
    return not isinstance(error, (AnswerCut, RateShareSpent, RequestRejected))


@dataclass
class Breaker:
    """One model's breaker in this container (thread-safe: a generator serves ten users at once)."""

    model: str
    failures_to_open: int = DEFAULT_FAILURES_TO_OPEN
    cooldown_s: float = DEFAULT_COOLDOWN_S
    clock: Callable[[], float] = time.monotonic
    notify: Callable[[str, str, dict[str, object]], None] | None = None
    _failures: int = 0
    _open_until: float | None = None
    _trial_running: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def resting_for(self) -> float:
        """Seconds until the model may be tried (0: now), without taking the trial."""
        with self._lock:
            if self._open_until is None:
                return 0.0
            if self._trial_running:
                return max(self.cooldown_s, 0.0)
            return max(0.0, self._open_until - self.clock())

    def allows(self) -> bool:
        """Whether a call may go to the model now; an open breaker past its cool-down lets one
        trial through (the others wait for its outcome)."""
        with self._lock:
            if self._open_until is None:
                return True
            if self._trial_running or self.clock() < self._open_until:
                return False
            self._trial_running = True
            return True

    def succeeded(self) -> None:
        with self._lock:
            was_open = self._open_until is not None
            self._failures, self._open_until, self._trial_running = 0, None, False
        if was_open:
            self._tell("closed", {})

    def failed(self, error: ProviderError) -> None:
        if not counts_against(error):
            with self._lock:
                self._trial_running = False
            return
        wait = self.cooldown_s
        if isinstance(error, RateLimited) and error.retry_after_s is not None:
            wait = max(wait, error.retry_after_s)
        with self._lock:
            self._failures += 1
            reopen = self._trial_running or (self._open_until is None and self._failures >= self.failures_to_open)
            self._trial_running = False
            if not reopen:
                return
            self._open_until = self.clock() + wait
            failures = self._failures
        self._tell("opened", {"failures": failures, "cooldown_s": round(wait, 1), "error": error.kind})

    def _tell(self, what: str, details: dict[str, object]) -> None:
        if self.notify is not None:
            self.notify(self.model, what, details)


@dataclass(frozen=True)
class ChainLink:
    model: ChatModel
    output: Strategy = Strategy.JSON_SCHEMA
    breaker: Breaker | None = None


class ModelChain:
    """``ChatModel`` over ``links`` in order (see the module docstring)."""

    def __init__(self, links: Sequence[ChainLink]) -> None:
        if not links:
            raise ValueError("a model chain needs at least one model")
        self.links = tuple(links)

    def _first_ready(self) -> ChainLink:
        return next(
            (link for link in self.links if link.breaker is None or not link.breaker.resting_for()), self.links[0]
        )

    @property
    def model_name(self) -> str:
        """The model the next call goes to first: what the engine plans the attempt with."""
        return self._first_ready().model.model_name

    @property
    def speed_prior(self) -> SpeedEstimate:
        return speed_prior(self._first_ready().model)

    def complete(self, request: ChatRequest) -> ChatResponse:
        """The first link's answer that comes. A link that fails was billed for what it streamed
        (a cut or stalled answer): the answer or the error that ends the call carries those calls
        (``earlier_calls``), so the attempt counts every link's tokens at its own model's price."""
        failures: list[ProviderError] = []
        spent: tuple[ModelCall, ...] = ()
        for position, link in enumerate(self.links):
            if link.breaker is not None and not link.breaker.allows():
                continue
            answer_by = request.pacing.answer_by
            if failures and answer_by is not None and answer_by.remaining_s() <= 0:
                break
            try:
                response = link.model.complete(for_output(request, link.output))
            except ProviderError as error:
                if link.breaker is not None:
                    link.breaker.failed(error)
                name = link.model.model_name
                if error.partial is not None:
                    error.partial = replace(error.partial, served_by=error.partial.served_by or name)
                error.earlier_calls = (*spent, *error.earlier_calls)
                if isinstance(error, AnswerCut):
                    raise
                own = error.partial.usage if error.partial is not None else Usage()
                answered_as = (error.partial.model if error.partial is not None else "") or name
                spent = (*error.earlier_calls, ModelCall(answered_as, own))
                failures.append(error)
                if position + 1 < len(self.links):
                    logger.warning(
                        "model failed; the next model of the chain takes the call",
                        extra={"model": link.model.model_name, "error": error.kind, "purpose": request.purpose},
                    )
                continue
            if link.breaker is not None:
                link.breaker.succeeded()
            return replace(
                answer_from(response, link.output, request),
                served_by=link.model.model_name,
                earlier_calls=(*spent, *response.earlier_calls),
            )
        if failures:
            raise failures[-1]
        resting = min(link.breaker.resting_for() for link in self.links if link.breaker is not None)
        raise ModelsResting(
            f"every model of the chain is resting after repeated failures; next try in {resting:.0f} s",
            resting,
        )


def for_output(request: ChatRequest, mode: Strategy) -> ChatRequest:
    """The request in the way ``mode`` gives a model the output schema."""
    parameters = request.parameters
    output = parameters.json_output
    if output is None or mode is Strategy.JSON_SCHEMA:
        return request
    if mode is Strategy.TOOL:
        tools = (*parameters.tools, structured_tool(output.schema, output.strict))
        return replace(request, parameters=replace(parameters, json_output=None, tools=tools, tool_choice=TOOL_NAME))
    instruction: Message = {"role": "system", "content": default_schema_instruction(output.schema)}
    return replace(request, parameters=replace(parameters, json_output=None), messages=[*request.messages, instruction])


def answer_from(response: ChatResponse, mode: Strategy, request: ChatRequest) -> ChatResponse:
    """The answer as native structured output would have given it: the JSON as the text."""
    if request.parameters.json_output is None or mode is Strategy.JSON_SCHEMA:
        return response
    if mode is Strategy.TOOL:
        call = next((c for c in response.tool_calls if c.name == TOOL_NAME), None)
        if call is None:
            return response
        finish = "stop" if response.finish_reason in ("tool_calls", "stop") else response.finish_reason
        return replace(response, content=call.arguments, tool_calls=(), finish_reason=finish)
    found = extract_json(response.content or "")
    if found is None:
        return response
    return replace(response, content=json.dumps(found, ensure_ascii=False))
