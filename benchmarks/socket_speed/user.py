"""One chat answer, timed from its user's side, in a process of its own (a container of its own):
``python -m benchmarks.socket_speed.user <path> <profile> <seed>``.

The local runner serves the template (the WebSocket API included) with the real openai client
against the fake server at the profile's pace, in real seconds. The user opens a session and a
socket, says ``ready`` on stdout and waits for ``go`` on stdin (so that every user of a row starts
at once, after every process has started), sends one message by ``path``, and reads every frame
until ``done`` (``baseline``: no socket; it reads the answer by REST, polling a 202's Location).
The queues are delivered every ``POLL_S`` as Lambda's pollers do. Prints one JSON line.

How it works, and why: benchmarks/README.md (section ``socket_bench``).
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from dataclasses import replace
from typing import Any

from benchmarks.real_speed.user import _request

PATHS = ("rest", "rest-202", "socket", "baseline")
POLL_S = 0.1  # Lambda's SQS poller long-polls: a message is taken as soon as it is sent
GIVE_UP_S = 300.0
MESSAGE = "中途採用の段取りを作りたいです"
REASONING_FIRST_TOKEN_S = 25.0


class Frames:
    """Every frame of the socket, with when it came (monotonic seconds), read on a thread of its own."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.received: list[tuple[float, dict[str, Any], int]] = []
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self.done.is_set():
            try:
                raw = self.ws.recv(timeout=GIVE_UP_S)
            except Exception:
                return
            size = len(raw.encode() if isinstance(raw, str) else raw)
            frame = json.loads(raw)
            self.received.append((time.monotonic(), frame, size))
            if frame.get("type") in ("done", "error"):
                self.done.set()

    def first(self, kind: str) -> float | None:
        return next((at for at, frame, _ in self.received if frame.get("type") == kind), None)


class Deliveries:
    """The runner's queues, delivered every ``POLL_S`` while the user waits."""

    def __init__(self, runner: Any) -> None:
        self._runner = runner
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Deliveries:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=GIVE_UP_S)

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            for queue_id in self._runner.subscriptions:
                self._runner.deliver(queue_id, redeliver_failures=False)


def joined(frames: list[dict[str, Any]]) -> str:
    text = ""
    for frame in frames:
        if frame.get("type") == "delta":
            text = text[: frame["offset"]] + frame["text"]
    return text


def send(runner: Any, path: str, session: str, user: str, ws: Any) -> tuple[int, dict[str, str]]:
    """The message sent by ``path``; (the REST status, its headers) or (0, {}) by socket."""
    if path == "socket":
        body = {"action": "sendMessage", "to": "chat", "sessionId": session, "message": MESSAGE}
        ws.send(json.dumps({**body, "clientMessageId": "bench-1"}, ensure_ascii=False))
        return 0, {}
    from devtools.runner_api import STAGE, HttpRequest

    headers = [("Content-Type", "application/json"), ("X-Local-User", user)]
    if path == "rest-202":
        headers.append(("Prefer", "respond-async"))
    payload = json.dumps({"message": MESSAGE}, ensure_ascii=False).encode()
    request = HttpRequest("POST", f"/{STAGE}/ai-agent/sessions/{session}/messages", "", headers, payload)
    response = runner.handle_http(request)
    return response.status, {name.lower(): value for name, value in response.headers}


def whole_by_rest(runner: Any, status: int, headers: dict[str, str], started: float, user: str) -> float:
    """When the whole answer was in the client's hands by REST (a 202 polled at its Retry-After)."""
    while status == 202 and time.monotonic() - started < GIVE_UP_S:
        time.sleep(max(1.0, float(headers.get("retry-after", "1"))))
        status, _, headers = _request(runner, "GET", headers["location"], user=user)
    return time.monotonic()


def measured(runner: Any, fake: Any, path: str, user: str, out: Any) -> dict[str, Any]:
    from websockets.sync.client import connect

    from devtools.runner import serving

    with serving(runner) as url:  # first: a function started before it would push its frames nowhere
        context = {"context": {"processType": "中途採用"}}
        status, session, _ = _request(runner, "POST", "/ai-agent/sessions", context, user=user)
        assert status == 201, session
        session_id = session["sessionId"]
        ws = None if path == "baseline" else connect(url.replace("http://", "ws://") + f"/v1?localUser={user}")
        frames = Frames(ws) if ws is not None else None
        out.write("ready\n")
        out.flush()
        sys.stdin.readline()  # go
        started = time.monotonic()
        with Deliveries(runner):
            first_status, headers = send(runner, path, session_id, user, ws)
            answered_at = time.monotonic()
            if frames is None:
                whole_at = whole_by_rest(runner, first_status, headers, started, user)
            else:
                frames.done.wait(GIVE_UP_S)
                whole_at = frames.first("done") or math.nan
        if ws is not None:
            ws.close()
    return outcome(fake, path, started, answered_at, whole_at, first_status, frames, runner, user, session_id)


def outcome(
    fake: Any,
    path: str,
    started: float,
    answered_at: float,
    whole_at: float,
    first_status: int,
    frames: Frames | None,
    runner: Any,
    user: str,
    session_id: str,
) -> dict[str, Any]:
    from lambda_agents.llm.prices import cost_usd
    from lambda_agents.llm.types import Usage

    time.sleep(0.2)  # the ledger's last records
    billed = sorted(fake.billing, key=lambda record: record.started_at)
    first_token = next((r.first_token_at for r in billed if r.first_token_at), math.nan)

    def seconds(moment: float | None) -> float | None:
        return None if moment is None or math.isnan(moment) else moment - started

    result: dict[str, Any] = {
        "path": path,
        "status": first_status,
        "handed_over": first_status == 202 or path == "socket",
        "first_token_s": seconds(first_token),
        "model_call_s": seconds(billed[0].started_at) if billed else None,
        "answered_s": seconds(answered_at),
        "whole_s": seconds(whole_at),
        "calls": len(billed),
        "model_cost_usd": sum(
            cost_usd(r.model, Usage(r.prompt_tokens, r.completion_tokens, cached_prompt_tokens=r.cached_tokens)) or 0.0
            for r in billed
        ),
    }
    if frames is not None:
        received = frames.received
        kinds = [frame.get("type") for _, frame, _ in received]
        status, stored, _ = _request(runner, "GET", f"/ai-agent/sessions/{session_id}/messages/2", user=user)
        content = (stored or {}).get("aiResponse", {}).get("content")
        words = [frame for _, frame, _ in received]
        result.update(
            first_words_s=seconds(frames.first("delta")),
            frames=len(received),
            deltas=kinds.count("delta"),
            frame_bytes=[size for _, _, size in received],
            equal=status == 200 and content is not None and joined(words) == content,
            fallback=bool((stored or {}).get("aiResponse", {}).get("fallback")),
        )
    return result


def run(path: str, profile_name: str, seed: int, out: Any) -> dict[str, Any]:
    from benchmarks.real_speed.answers import chat_reply
    from devtools.fake_openai import PROFILES, FakeOpenAIServer
    from devtools.runner import LocalRunner
    from devtools.template import load_template

    with FakeOpenAIServer(profile=PROFILES[profile_name], seed=seed) as fake:
        # As a developer's shell would hold them: the runner passes them to every function.
        os.environ.update({"AI_AGENT_MODE": "openai", "OPENAI_API_KEY": "bench", "OPENAI_BASE_URL": fake.base_url})
        with LocalRunner(load_template(), environ=dict(os.environ)) as runner:
            reply = chat_reply()
            if profile_name == "reasoning":  # a reasoning model that thinks 25 s before its first token
                reply = replace(reply, first_token_s=REASONING_FIRST_TOKEN_S)
            fake.enqueue(*[reply for _ in range(3)])  # the request's answer, and the worker's after a cut
            return measured(runner, fake, path, f"bench-socket-{seed}", out)


def main(argv: list[str] | None = None) -> None:
    import argparse

    from devtools.fake_openai import PROFILES
    from devtools.runner import stdout_reserved_for_result

    parser = argparse.ArgumentParser(prog="python -m benchmarks.socket_speed.user", description=__doc__)
    parser.add_argument("path", choices=PATHS)
    parser.add_argument("profile", choices=sorted(PROFILES), help="the fake server's pace")
    parser.add_argument("seed", type=int, help="the fake server's seed (and the user's name)")
    arguments = parser.parse_args(argv)
    with stdout_reserved_for_result() as out:
        result = run(arguments.path, arguments.profile, arguments.seed, out)
        out.write(json.dumps(result) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
