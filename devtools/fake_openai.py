"""A fake OpenAI-compatible chat.completions server on 127.0.0.1, driven by a script.

Integration tests and the demo point the real openai client at it (``base_url``). Each request
consumes one scripted step (a reply or a fault); with the script empty it answers with a
schema-valid sample for the request's ``json_schema`` / forced tool, or with plain text.

It bills and truncates like a provider: an answer that needs more tokens than the request's
``max_completion_tokens`` / ``max_tokens`` stops where the budget runs out (the first
limit/needed share of its text, ``finish_reason=length``) and is billed the whole limit; a
scripted ``length`` reply is billed the limit too. It takes either token field by default;
``token_fields`` narrows that to play a reasoning model (``max_completion_tokens`` only) or an
older compatible server (``max_tokens`` only), answering the other with the 400 they give.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lambda_agents.llm.offline_model import sample
from lambda_agents.llm.types import estimate_tokens

TOKEN_FIELDS = ("max_completion_tokens", "max_tokens")


@dataclass(frozen=True)
class Reply:
    """One answer. ``needs_tokens``: what the whole answer costs; below it, the request's limit
    truncates the answer (see the module docstring). ``completion_tokens`` overrides billing."""

    content: str | None = None
    finish_reason: str = "stop"
    refusal: str | None = None
    tool_arguments: str | None = None
    tool_name: str = "StructuredOutput"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    needs_tokens: int | None = None
    reasoning_tokens: int = 0  # part of completion_tokens a reasoning model spent thinking


@dataclass(frozen=True)
class Fault:
    status: int = 500
    retry_after: float | None = None
    message: str = "fault injected by the fake server"


@dataclass(frozen=True)
class Slow:
    seconds: float
    then: Reply | Fault | None = None


Step = Reply | Fault | Slow


class FakeOpenAIServer:
    def __init__(self, host: str = "127.0.0.1", port: int = 0, token_fields: tuple[str, ...] = TOKEN_FIELDS) -> None:
        self.token_fields = token_fields
        self._steps: deque[Step] = deque()
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self._httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        host_text = host.decode() if isinstance(host, bytes) else str(host)
        return f"http://{host_text}:{port}/v1"

    def enqueue(self, *steps: Step) -> None:
        with self._lock:
            self._steps.extend(steps)

    def reset(self) -> None:
        with self._lock:
            self._steps.clear()
            self.requests.clear()

    @property
    def pending_steps(self) -> int:
        with self._lock:
            return len(self._steps)

    def assert_script_consumed(self) -> None:
        if self.pending_steps:
            raise AssertionError(f"{self.pending_steps} scripted step(s) were never requested")

    def start(self) -> FakeOpenAIServer:
        # A short poll interval: shutdown() waits up to one interval, which is paid per test.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next_step(self, body: dict[str, Any]) -> Step | None:
        with self._lock:
            self.requests.append(body)
            return self._steps.popleft() if self._steps else None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # Headers and body go out in separate writes: without TCP_NODELAY, Nagle's
                # algorithm and delayed ACKs add ~40 ms to every request.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"unknown path {self.path}", "type": "not_found"}})
                    return
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    self._send(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
                    return
                refused = unsupported_token_field(body, server.token_fields)
                if refused is not None:
                    self._send(400, {"error": {"message": refused, "type": "invalid_request_error"}})
                    return
                step = server._next_step(body)
                if isinstance(step, Slow):
                    time.sleep(step.seconds)
                    step = step.then
                if isinstance(step, Fault):
                    headers = {}
                    if step.retry_after is not None:
                        headers["retry-after"] = f"{step.retry_after:g}"
                    kind = "rate_limit_exceeded" if step.status == 429 else "server_error"
                    if 400 <= step.status < 429:
                        kind = "invalid_request_error"
                    self._send(step.status, {"error": {"message": step.message, "type": kind, "code": kind}}, headers)
                    return
                self._send(200, completion(body, step or default_reply(body)))

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout): nothing to answer

        return Handler


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


def completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    reply = within_budget(reply, token_limit(body))
    prompt_tokens = reply.prompt_tokens
    if prompt_tokens is None:
        prompt_tokens = estimate_tokens(json.dumps(body.get("messages", []), ensure_ascii=False))
    text = reply.tool_arguments if reply.tool_arguments is not None else (reply.content or reply.refusal or "")
    completion_tokens = reply.completion_tokens if reply.completion_tokens is not None else estimate_tokens(text)
    message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": reply.refusal}
    if reply.tool_arguments is not None:
        message["tool_calls"] = [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": reply.tool_name, "arguments": reply.tool_arguments},
            }
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model", "fake-model")),
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason, "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "completion_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve a fake OpenAI-compatible API on 127.0.0.1")
    parser.add_argument("--port", type=int, default=8787)
    args = parser.parse_args()
    with FakeOpenAIServer(port=args.port) as server:
        print(f"fake OpenAI server at {server.base_url} (Ctrl-C to stop)")
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
