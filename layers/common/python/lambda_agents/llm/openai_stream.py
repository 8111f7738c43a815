"""An OpenAI chat.completions answer as it arrives, chunk by chunk, read into the provider-neutral
``ChatResponse`` (``openai_model`` streams it; how it arrives in time is ``pacing.StreamWatch``'s).
Reads the SDK's objects by their attributes only: no import of openai.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .types import ChatResponse, HeardAnswer, ResponseTiming, ToolCall, Usage, tokens_in_bytes

CUT = "cut"  # finish_reason of a partial answer: it ended before the model finished it


@dataclass
class _ToolCallParts:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StreamedAnswer:
    """The answer put together chunk by chunk (how it arrived in time is the pacing's ``StreamWatch``);
    each piece of text or of a tool call's arguments is told to the request's ``listener`` as it comes."""

    def __init__(
        self, model: str, prompt_tokens: int, max_tokens: int = 0, listener: HeardAnswer | None = None
    ) -> None:
        self._model = model
        self._listener = listener
        self._prompt_tokens = prompt_tokens
        self._max_tokens = max_tokens
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
            self.token_chunks += 1
        return carried

    def _take(self, delta: Any) -> bool:
        carried = False
        if getattr(delta, "content", None):
            self.content.append(delta.content)
            self.written_bytes += len(delta.content.encode("utf-8"))
            carried = True
            if self._listener is not None:
                self._listener.text(delta.content)
        if getattr(delta, "refusal", None):
            self.refusal.append(delta.refusal)
            self.written_bytes += len(delta.refusal.encode("utf-8"))
            carried = True
        for call in getattr(delta, "tool_calls", None) or []:
            index = int(getattr(call, "index", 0) or 0)
            parts = self.tools.setdefault(index, _ToolCallParts())
            parts.id = getattr(call, "id", None) or parts.id
            function = getattr(call, "function", None)
            if function is not None:
                parts.name = getattr(function, "name", None) or parts.name
                if getattr(function, "arguments", None):
                    parts.arguments.append(function.arguments)
                    self.written_bytes += len(function.arguments.encode("utf-8"))
                    carried = True
                    if self._listener is not None:
                        self._listener.tool_arguments(index, parts.name, function.arguments)
        return carried

    def _calls(self) -> tuple[ToolCall, ...]:
        return tuple(
            ToolCall(parts.id, parts.name, "".join(parts.arguments))
            for _, parts in sorted(self.tools.items())
            if parts.name
        )

    @property
    def written_tokens(self) -> int:
        """The tokens that have arrived: a chunk is about one token from OpenAI; a server that sends
        several per chunk is read by the size of what it wrote (``estimate_tokens``)."""
        return max(self.token_chunks, tokens_in_bytes(self.written_bytes))

    def _counted_usage(self) -> Usage:
        """What the provider billed for what arrived, when it did not say (a cut stream)."""
        return Usage(self._prompt_tokens, self.written_tokens, estimated=True)

    def _build(self, finish_reason: str, usage: Usage, timing: ResponseTiming | None) -> ChatResponse:
        calls = self._calls()
        content = "".join(self.content) if self.content or not (calls or self.refusal) else None
        return ChatResponse(
            content=content,
            finish_reason=finish_reason,
            refusal="".join(self.refusal) or None,
            tool_calls=calls,
            usage=usage,
            model=self.model or self._model,
            timing=timing,
            service_tier=self.service_tier,
        )

    def response(self, timing: ResponseTiming | None) -> ChatResponse:
        usage = usage_of(self.usage) if self.usage is not None else self._counted_usage()
        return self._build(self.finish_reason or CUT, usage, timing)

    def partial(self, timing: ResponseTiming | None) -> ChatResponse:
        """What arrived before the stream ended early, billed on the safe side: OpenAI documents
        nothing of what it bills for a stream the client closes (or that breaks) before its usage
        chunk, and the model may go on writing to ``max_tokens`` after the connection is gone, so
        the completion counts as the most the call could write (at least what arrived). What
        arrived stays in ``arrived_tokens``: the model's pace is learned from that."""
        billed = Usage(self._prompt_tokens, max(self.written_tokens, self._max_tokens), estimated=True)
        return replace(self._build(CUT, billed, timing), arrived_tokens=self.written_tokens)


def usage_of(usage: Any) -> Usage:
    """The provider's usage as the engine counts it: reasoning and cached prompt tokens included."""
    if usage is None:
        return Usage()
    details = getattr(usage, "completion_tokens_details", None)
    reasoning = getattr(details, "reasoning_tokens", None) if details is not None else None
    prompt_details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(prompt_details, "cached_tokens", None) if prompt_details is not None else None
    return Usage(
        usage.prompt_tokens or 0, usage.completion_tokens or 0, reasoning or 0, cached_prompt_tokens=cached or 0
    )
