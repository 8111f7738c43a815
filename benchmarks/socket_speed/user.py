"""One chat answer, timed from its user's side, in a process of its own (a container of its own):
``python -m benchmarks.socket_speed.user <path> <profile> <seed>``.

The local runner serves the template (the WebSocket API included) with the real openai client
against the fake server at the profile's pace, in real seconds. The user opens a session and a
socket and sends a short first message by ``path`` (the warm-up: every function of the path and
the openai client are loaded, and the container has met the model's pace, as in a service that
is running), says ``ready`` on stdout and waits for ``go`` on stdin (so that every user of a row
starts at once, after every process has set up), sends the measured message and reads every frame
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

from benchmarks.real_speed.user import Deliveries, _request

PATHS = ("rest", "rest-202", "socket", "baseline", "browser")
POLL_S = 0.1  # Lambda's SQS poller long-polls: a message is taken as soon as it is sent
GIVE_UP_S = 300.0
REASONING_FIRST_TOKEN_S = 25.0
WARM_UP = "工程を三つに分けました。"


class Frames:
    """Every frame of the socket, with when it came (monotonic seconds), read on a thread of its own."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.received: list[tuple[float, dict[str, Any], int]] = []
        self.done = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                raw = self.ws.recv(timeout=GIVE_UP_S)
            except Exception:
                return
            frame = json.loads(raw)
            self.received.append((time.monotonic(), frame, len(raw.encode() if isinstance(raw, str) else raw)))
            if frame.get("type") in ("done", "error"):
                self.done.set()

    def first(self, kind: str) -> float | None:
        return next((at for at, frame, _ in self.received if frame.get("type") == kind), None)

    def joined(self) -> str:
        """The words as the client has them: each delta applied at its offset."""
        text = ""
        for _, frame, _ in self.received:
            if frame.get("type") == "delta":
                text = text[: frame["offset"]] + frame["text"]
        return text


def send(runner: Any, path: str, session: str, user: str, ws: Any) -> tuple[int, dict[str, str]]:
    """The message sent by ``path``; (the REST status, its headers) or (0, {}) by socket."""
    message = "中途採用の段取りを作りたいです"
    if path == "socket":
        body = {"action": "sendMessage", "to": "chat", "sessionId": session, "message": message}
        ws.send(json.dumps({**body, "clientMessageId": f"bench-{time.monotonic()}"}, ensure_ascii=False))
        return 0, {}
    from devtools.runner_api import STAGE, HttpRequest

    headers = [("Content-Type", "application/json"), ("X-Local-User", user)]
    if path == "rest-202":
        headers.append(("Prefer", "respond-async"))
    payload = json.dumps({"message": message}, ensure_ascii=False).encode()
    response = runner.handle_http(
        HttpRequest("POST", f"/{STAGE}/ai-agent/sessions/{session}/messages", "", headers, payload)
    )
    return response.status, {name.lower(): value for name, value in response.headers}


def answered(runner: Any, path: str, session: str, user: str, frames: Frames | None) -> tuple[int, float]:
    """One message sent and waited for: (its first REST status, when the whole answer was the user's)."""
    started = time.monotonic()
    if frames is not None:
        frames.received.clear()
        frames.done.clear()
    status, headers = send(runner, path, session, user, None if frames is None else frames.ws)
    if frames is not None:
        frames.done.wait(GIVE_UP_S)
        return status, frames.first("done") or math.nan
    polled = status
    while polled == 202 and time.monotonic() - started < GIVE_UP_S:
        time.sleep(max(1.0, float(headers.get("retry-after", "1"))))  # polled at its Retry-After
        polled, _, headers = _request(runner, "GET", headers["location"], user=user)
    return status, time.monotonic()


def measured(runner: Any, fake: Any, path: str, reply: Any, user: str, out: Any) -> dict[str, Any]:
    from websockets.sync.client import connect

    from devtools.runner import serving

    with serving(runner) as url, Deliveries(runner, POLL_S):  # serving first: it gives functions the socket
        status, session, _ = _request(runner, "POST", "/ai-agent/sessions", {}, user=user)
        assert status == 201, session
        ws = None if path == "baseline" else connect(url.replace("http://", "ws://") + f"/v1?localUser={user}")
        frames = Frames(ws) if ws is not None else None
        fake.enqueue(replace(reply, content=WARM_UP, first_token_s=None))  # at the profile's pace
        answered(runner, path, session["sessionId"], user, frames)
        fake.enqueue(*[reply for _ in range(3)])  # the request's answer, and the worker's after a cut
        out.write("ready\n")
        out.flush()
        sys.stdin.readline()  # go
        started = time.monotonic()
        first_status, whole_at = answered(runner, path, session["sessionId"], user, frames)
        if ws is not None:
            ws.close()
    time.sleep(0.2)  # the ledger's last records
    billed = sorted((r for r in fake.billing if r.started_at >= started), key=lambda record: record.started_at)
    return outcome(runner, user, session["sessionId"], path, started, first_status, whole_at, frames, billed)


def outcome(
    runner: Any,
    user: str,
    session: str,
    path: str,
    started: float,
    status: int,
    whole_at: float,
    frames: Any,
    billed: Any,
) -> dict[str, Any]:
    from lambda_agents.llm.prices import cost_usd
    from lambda_agents.llm.types import Usage

    def seconds(moment: float | None) -> float | None:
        return None if moment is None or math.isnan(moment) else moment - started

    result: dict[str, Any] = {
        "path": path,
        "status": status,
        "handed_over": status == 202 or path == "socket",
        "first_token_s": seconds(next((r.first_token_at for r in billed if r.first_token_at), None)),
        "model_call_s": seconds(billed[0].started_at) if billed else None,
        "whole_s": seconds(whole_at),
        "calls": len(billed),
        "model_cost_usd": sum(
            cost_usd(r.model, Usage(r.prompt_tokens, r.completion_tokens, cached_prompt_tokens=r.cached_tokens)) or 0.0
            for r in billed
        ),
    }
    if frames is not None:
        done: dict[str, Any] = next((f for _, f, _ in frames.received if f.get("type") == "done"), {})
        _, stored, _ = _request(runner, "GET", f"/ai-agent/sessions/{session}/messages/{done.get('seq')}", user=user)
        content = ((stored or {}).get("aiResponse") or {}).get("content")
        result.update(
            first_words_s=seconds(frames.first("delta")),
            frames=len(frames.received),
            frame_bytes=[size for _, _, size in frames.received],
            equal=content is not None and frames.joined() == content,
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
            if path == "browser":  # the page in Chromium: benchmarks/socket_speed/browser.py
                from benchmarks.socket_speed.browser import measured_in_browser

                return measured_in_browser(runner, fake, reply, f"bench-socket-{seed}", out)
            return measured(runner, fake, path, reply, f"bench-socket-{seed}", out)


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
        out.write(json.dumps(run(arguments.path, arguments.profile, arguments.seed, out)) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
