"""What the fake server answers: the whole completion, or the chunks of its stream, billed and
cut by the request's budget as a provider does.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from typing import Any

from lambda_agents.llm.offline_model import sample
from lambda_agents.llm.types import estimate_tokens

from .caching import cacheable_tokens
from .script import Reply

TOKEN_FIELDS = ("max_completion_tokens", "max_tokens")
COMPLETION_ID = "chatcmpl-fake"
TOOL_CALL_ID = "call_1"


def requested_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema")
        return schema if isinstance(schema, dict) else None
    for tool in body.get("tools") or []:
        function = tool.get("function") or {}
        if isinstance(function.get("parameters"), dict):
            return dict(function["parameters"])
    return None


def default_reply(body: dict[str, Any]) -> Reply:
    schema = requested_schema(body)
    if schema is None:
        return Reply(content="OK.")
    payload = json.dumps(sample(schema), ensure_ascii=False)
    if body.get("tools"):
        name = body["tools"][0].get("function", {}).get("name", "StructuredOutput")
        return Reply(tool_arguments=payload, tool_name=name, finish_reason="tool_calls")
    return Reply(content=payload)


def token_limit(body: dict[str, Any]) -> int | None:
    """The request's answer budget, whichever field carries it."""
    for key in TOKEN_FIELDS:
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def unsupported_token_field(body: dict[str, Any], accepted: tuple[str, ...]) -> str | None:
    """The 400 message a server that does not know the request's token field answers with."""
    for key in TOKEN_FIELDS:
        if key in body and key not in accepted:
            if key == "max_tokens":
                return (
                    "Unsupported parameter: 'max_tokens' is not supported with this model. "
                    "Use 'max_completion_tokens' instead."
                )
            return f"Unrecognized request argument supplied: {key}"
    return None


def cut_to_budget(text: str, limit: int, needed: int) -> str:
    """What a model has written when its budget runs out: the first limit/needed of its text."""
    return text[: len(text) * limit // needed] if needed > limit else text


def within_budget(reply: Reply, limit: int | None) -> Reply:
    """``reply`` as the request's budget lets it out: truncated and billed at the limit when the
    answer needs more; a scripted ``length`` billed at the limit."""
    if reply.finish_reason == "length":
        if reply.completion_tokens is not None or limit is None:
            return reply
        return replace(reply, completion_tokens=limit)
    text = reply.tool_arguments if reply.tool_arguments is not None else reply.content
    needed = reply.needs_tokens
    if needed is None:
        if reply.completion_tokens is not None or text is None:
            return reply
        needed = estimate_tokens(text)
    if limit is None or needed <= limit or text is None:
        billed = reply.completion_tokens if reply.completion_tokens is not None else needed
        return replace(reply, completion_tokens=billed)
    cut = cut_to_budget(text, limit, needed)
    if reply.tool_arguments is not None:
        return replace(reply, tool_arguments=cut, finish_reason="length", completion_tokens=limit)
    return replace(reply, content=cut, finish_reason="length", completion_tokens=limit)


@dataclass(frozen=True)
class Billed:
    """An answer as the budget lets it out, and what it costs."""

    reply: Reply
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0  # the part of prompt_tokens the prompt cache served (caching.py)

    @property
    def text(self) -> str:
        """The text the tokens are written in: the tool's arguments, the content or the refusal."""
        reply = self.reply
        return reply.tool_arguments if reply.tool_arguments is not None else (reply.content or reply.refusal or "")

    def usage(self) -> dict[str, Any]:
        """OpenAI's ``usage`` object, both details on every answer as the provider sends them."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cached_tokens, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": self.reply.reasoning_tokens,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }


def prompt_tokens_of(body: dict[str, Any]) -> int:
    """What a request costs as input, as OpenAI counts it: the messages and the schema or tools
    sent with them (a structured answer's schema is read by the model, and billed)."""
    parts = [body.get("messages", []), body.get("tools") or [], body.get("response_format") or {}]
    return estimate_tokens(json.dumps(parts, ensure_ascii=False))


def bill(body: dict[str, Any], reply: Reply, cached_tokens: int = 0) -> Billed:
    """``reply`` as billed; ``cached_tokens``: what the prompt cache served (``PromptCache.serve``),
    held to what a scripted ``prompt_tokens`` can have cached."""
    reply = within_budget(reply, token_limit(body))
    prompt_tokens = reply.prompt_tokens if reply.prompt_tokens is not None else prompt_tokens_of(body)
    text = reply.tool_arguments if reply.tool_arguments is not None else (reply.content or reply.refusal or "")
    completion_tokens = reply.completion_tokens if reply.completion_tokens is not None else estimate_tokens(text)
    return Billed(reply, prompt_tokens, completion_tokens, min(cached_tokens, cacheable_tokens(prompt_tokens)))


def completion(body: dict[str, Any], reply: Reply, cached_tokens: int = 0) -> dict[str, Any]:
    """The whole (non-streamed) ``chat.completion`` for ``reply``."""
    billed = bill(body, reply, cached_tokens)
    reply = billed.reply
    message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": reply.refusal}
    if reply.tool_arguments is not None:
        message["tool_calls"] = [
            {
                "id": TOOL_CALL_ID,
                "type": "function",
                "function": {"name": reply.tool_name, "arguments": reply.tool_arguments},
            }
        ]
    return {
        "id": COMPLETION_ID,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model", "fake-model")),
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason, "logprobs": None}],
        "usage": billed.usage(),
    }


def token_pieces(text: str, tokens: int) -> list[str]:
    """``text`` split into ``tokens`` pieces of about equal length (whole characters), as a stream
    delivers one token's text per delta; fewer when the text is shorter than that."""
    if not text:
        return []
    count = max(1, min(tokens, len(text)))
    return [text[len(text) * index // count : len(text) * (index + 1) // count] for index in range(count)]


class StreamChunks:
    """The ``chat.completion.chunk`` objects of one streamed answer, built as they are sent."""

    def __init__(self, body: dict[str, Any], billed: Billed) -> None:
        self._model = str(body.get("model", "fake-model"))
        self._created = int(time.time())
        self.billed = billed
        self.include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        reply = billed.reply
        self.kind = "tool" if reply.tool_arguments is not None else ("refusal" if reply.refusal else "content")
        self.pieces = token_pieces(billed.text, billed.completion_tokens)

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": COMPLETION_ID,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }
        if self.include_usage:
            chunk["usage"] = None
        return chunk

    def role(self) -> dict[str, Any]:
        content = None if self.kind == "tool" else ""
        return self._chunk({"role": "assistant", "content": content, "refusal": None})

    def piece(self, index: int, text: str) -> dict[str, Any]:
        if self.kind == "refusal":
            return self._chunk({"content": None, "refusal": text})
        if self.kind == "content":
            return self._chunk({"content": text})
        call: dict[str, Any] = {"index": 0, "function": {"arguments": text}}
        if index == 0:
            call = {
                "index": 0,
                "id": TOOL_CALL_ID,
                "type": "function",
                "function": {"name": self.billed.reply.tool_name, "arguments": text},
            }
        return self._chunk({"tool_calls": [call]})

    def finish(self) -> dict[str, Any]:
        return self._chunk({}, self.billed.reply.finish_reason)

    def usage(self) -> dict[str, Any] | None:
        if not self.include_usage:
            return None
        return {
            "id": COMPLETION_ID,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            "system_fingerprint": "fp_fake",
            "choices": [],
            "usage": self.billed.usage(),
        }
