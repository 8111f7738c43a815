"""The deterministic offline model behind ``AI_AGENT_MODE=mock``.

For a structured call it writes an answer that satisfies the output model's schema: exact array
lengths (minItems), enums, const, string limits, number bounds. It writes in the requested
language and reads two hints a model may put in ``json_schema_extra``:
``x-examples`` (a list, or ``{"ja": [...], "en": [...]}``) and ``x-index`` (an integer equal to
the item's position in its array, e.g. a slotIndex). Free-text and tool-calling calls are answered by the
responder registered for the request's ``purpose``: it returns the text, or a whole
``ChatResponse`` (tool calls, a finish_reason) when it plays an agent. Every request is
recorded in ``calls``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ..japanese import has_japanese
from .speeds import INSTANT, SpeedEstimate
from .types import TOOL_NAME, ChatRequest, ChatResponse, ToolCall, Usage, estimate_tokens

TextResponder = Callable[[ChatRequest], "str | ChatResponse"]


class OfflineModel:
    # It answers at once: no attempt is ever planned out of the deadline.
    speed_prior: SpeedEstimate = INSTANT

    def __init__(self, responders: dict[str, TextResponder] | None = None, name: str = "offline-mock") -> None:
        self._responders = dict(responders or {})
        self._name = name
        self.calls: list[ChatRequest] = []

    @property
    def model_name(self) -> str:
        return self._name

    def register(self, purpose: str, responder: TextResponder) -> None:
        self._responders[purpose] = responder

    def complete(self, request: ChatRequest) -> ChatResponse:
        """The answer, told whole to the request's listener (it writes at once: no pacing invented)."""
        response = self._answer(request)
        listener = request.heard()
        if listener is not None:
            listener.attempt_started()
            listener.whole(response)
        return response

    def _answer(self, request: ChatRequest) -> ChatResponse:
        self.calls.append(request)
        language = request.hints.language or detect_language(request.messages)
        prompt_tokens = estimate_tokens(json.dumps(request.messages, ensure_ascii=False))
        schema = request.hints.output_schema
        tools = request.parameters.tools
        if schema is not None and request.purpose not in self._responders:
            answer = json.dumps(sample(schema, language), ensure_ascii=False)
            usage = Usage(prompt_tokens, estimate_tokens(answer))
            if tools:
                call = ToolCall(f"call_{len(self.calls)}", TOOL_NAME, answer)
                return ChatResponse(None, "tool_calls", tool_calls=(call,), usage=usage, model=self._name)
            return ChatResponse(answer, "stop", usage=usage, model=self._name)
        responder = self._responders.get(request.purpose)
        if responder is not None and tools and schema is not None:
            # A structured responder behind the forced-tool strategy answers as the tool's arguments.
            arguments = responder(request)
            if isinstance(arguments, ChatResponse):
                return arguments
            call = ToolCall(f"call_{len(self.calls)}", TOOL_NAME, arguments)
            usage = Usage(prompt_tokens, estimate_tokens(arguments))
            return ChatResponse(None, "tool_calls", tool_calls=(call,), usage=usage, model=self._name)
        if responder is not None:
            reply = responder(request)
            if isinstance(reply, ChatResponse):
                return reply
            text = reply
        else:
            text = "承知しました。" if language == "ja" else "Understood."
        return ChatResponse(text, "stop", usage=Usage(prompt_tokens, estimate_tokens(text)), model=self._name)


def detect_language(messages: list[dict[str, Any]]) -> str:
    """'ja' when the latest user message has Japanese script, else 'en'."""
    for message in reversed(messages):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return "ja" if has_japanese(message["content"]) else "en"
    return "en"


def sample(schema: dict[str, Any], language: str = "en", name: str = "value", position: int = 0) -> Any:
    """A value that satisfies ``schema`` (an inlined pydantic schema), deterministic."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][position % len(schema["enum"])]
    if "anyOf" in schema:
        branches = [branch for branch in schema["anyOf"] if branch.get("type") != "null"]
        return sample(branches[0], language, name, position) if branches else None
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        return {key: sample(sub, language, key, position) for key, sub in schema.get("properties", {}).items()}
    if kind == "array":
        count = _array_length(schema)
        items = schema.get("items", {})
        return [sample(items, language, _singular(name), index) for index in range(count)]
    if kind == "string":
        return _string(schema, language, name, position)
    if kind in ("integer", "number"):
        return _number(schema, position, integer=kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _string(schema, language, name, position)


def _array_length(schema: dict[str, Any]) -> int:
    minimum = int(schema.get("minItems", 0))
    maximum = schema.get("maxItems")
    wanted = max(minimum, 2)
    return min(wanted, int(maximum)) if maximum is not None else wanted


def _string(schema: dict[str, Any], language: str, name: str, position: int) -> str:
    examples = schema.get("x-examples")
    if isinstance(examples, dict):
        examples = examples.get(language) or examples.get("en")
    if isinstance(examples, list) and examples:
        text = str(examples[position % len(examples)])
    else:
        label = re.sub(r"(?<!^)(?=[A-Z])", " ", name).replace("_", " ").strip().lower() or "value"
        text = f"{label}（案 {position + 1}）" if language == "ja" else f"{label.capitalize()} {position + 1}"
    maximum = schema.get("maxLength")
    if maximum is not None:
        text = text[: int(maximum)]
    minimum = int(schema.get("minLength", 0))
    if len(text) < minimum:
        text = text + "." * (minimum - len(text))
    return text


def _number(schema: dict[str, Any], position: int, integer: bool) -> int | float:
    if schema.get("x-index"):
        return position
    low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
    if "exclusiveMinimum" in schema and "minimum" not in schema:
        low = low + 1
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    value = max(low, 1) if high is None else min(max(low, 1), high if "maximum" in schema else high - 1)
    return int(value) if integer else float(value)


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") and len(name) > 1 else name
