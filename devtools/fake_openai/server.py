"""A fake OpenAI-compatible chat.completions server on 127.0.0.1, driven by a script.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs

from .answers import (
    TOKEN_FIELDS,
    Billed,
    StreamChunks,
    bill,
    completion,
    default_reply,
    prompt_tokens_of,
    token_limit,
    unsupported_token_field,
)
from .batches import CLOSED, BatchDesk
from .caching import DEFAULT_RETENTION_S, PromptCache, billed_user
from .flex import FlexCapacity, flex_pace, flex_refusal, tier_of, unknown_tier, with_tier
from .script import DEFAULT_ACCOUNT, INSTANT, Buckets, Fault, RateLimit, Reply, Slow, SpeedProfile, Step

# The shortest pause between two chunks: faster answers send several tokens per chunk, as a
# provider's network writes do.
MIN_CHUNK_INTERVAL_S = 0.005
Ended = Literal["complete", "client_closed", "dropped", "fault", "rate_limited"]


@dataclass(frozen=True)
class BillingRecord:
    """One request as the provider bills it; ``started_at`` on the server's monotonic clock."""

    request: int
    stream: bool
    prompt_tokens: int
    completion_tokens: int
    ended: Ended
    seconds: float
    started_at: float = 0.0
    batch: bool = False  # made by a batch job (the Batch API's price: half the list price)
    # The ledger's own fields (``_stamped``): the request's model, the part of ``prompt_tokens``
    # its prompt cache served, and whom it said it was for (``safety_identifier`` / ``user``).
    model: str = ""
    cached_tokens: int = 0
    user: str | None = None
    service_tier: str = "default"  # the tier that processed it (flex: the Batch API's price)
    # When a streamed answer's first token was sent (the server's monotonic clock; 0.0: never):
    # what a client's first words are timed against (benchmarks/socket_bench.py).
    first_token_at: float = 0.0


class ClientGone(Exception):
    """The client closed the connection (the write failed)."""


class _QuietServer(ThreadingHTTPServer):
    """A client that leaves mid-answer is normal here: no traceback for its connection."""

    daemon_threads = True
    fake: FakeOpenAIServer  # what its connections answer as

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class FakeOpenAIServer:
    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        token_fields: tuple[str, ...] = TOKEN_FIELDS,
        *,
        profile: SpeedProfile = INSTANT,
        time_scale: float = 1.0,
        seed: int = 0,
        rate_limit: RateLimit | None = DEFAULT_ACCOUNT,
        api_keys: frozenset[str] | None = None,
        enqueued_token_quota: int | None = None,
        batch_clock: Callable[[], float] = time.monotonic,
        limit_headers: bool | Literal["refusals"] = True,
        prompt_cache_retention_s: float = DEFAULT_RETENTION_S,
        cache_clock: Callable[[], float] = time.monotonic,
        rate_clock: Callable[[], float] = time.monotonic,
        chunk_interval_s: float = MIN_CHUNK_INTERVAL_S,
    ) -> None:
        if time_scale <= 0:
            raise ValueError("time_scale must be positive")
        self.token_fields = token_fields
        self.profile = profile
        self.time_scale = time_scale
        self._rng = random.Random(seed)
        # The least time between two chunks of an answer whose tokens come faster (a scaled-down
        # one): a test that streams several long answers at once may set it longer, so that its
        # CPU goes to the product rather than to chunks no provider would write that often.
        self.chunk_interval_s = chunk_interval_s
        # ``rate_clock``: the account's limit refills on it (a test may move it by hand, or share a
        # ``JumpingClock`` with the client's rate budget).
        self._rate_clock = rate_clock
        self._buckets = None if rate_limit is None else Buckets(rate_limit, time_scale, rate_clock)
        self.limit_headers = limit_headers
        self._steps: deque[Step] = deque()
        self._outage: Fault | Slow | None = None
        self.flex_capacity = FlexCapacity()
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.billing: list[BillingRecord] = []
        # The keys the account accepts (None: any); every request's key, in order.
        self.api_keys = api_keys
        self.keys_seen: list[str] = []
        # The account's prompt cache (caching.py); ``cache_clock`` may be moved by hand too.
        self.prompt_cache = PromptCache(prompt_cache_retention_s, clock=cache_clock, time_scale=lambda: self.time_scale)
        # ``batch_clock``: the batch jobs' clock (a test may move it by hand instead of waiting).
        self.batches = BatchDesk(
            batch_clock,
            time_scale=lambda: self.time_scale,
            record=self._record_batch,
            cached_tokens=self._cached_tokens,
            enqueued_token_quota=enqueued_token_quota,
            seed=seed,
        )
        self._httpd = _QuietServer((host, port), FakeOpenAIHandler)
        self._httpd.fake = self
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
            self.billing.clear()
        self.prompt_cache.clear()

    def set_profile(self, profile: SpeedProfile, time_scale: float | None = None) -> None:
        with self._lock:
            self.profile = profile
            if time_scale is not None:
                self.time_scale = time_scale

    def set_flex_capacity(self, capacity: FlexCapacity) -> None:
        """Flex short of capacity (its 429 to every flex call) or not (``flex.py``)."""
        with self._lock:
            self.flex_capacity = capacity

    def set_rate_limit(self, rate_limit: RateLimit | None) -> None:
        with self._lock:
            self._buckets = None if rate_limit is None else Buckets(rate_limit, self.time_scale, self._rate_clock)

    @property
    def pending_steps(self) -> int:
        with self._lock:
            return len(self._steps)

    def assert_script_consumed(self) -> None:
        if self.pending_steps:
            raise AssertionError(f"{self.pending_steps} scripted step(s) were never requested")

    def billed_completion_tokens(self) -> int:
        with self._lock:
            return sum(record.completion_tokens for record in self.billing)

    def billed_prompt_tokens(self) -> int:
        with self._lock:
            return sum(record.prompt_tokens for record in self.billing)

    def billed_cached_tokens(self) -> int:
        with self._lock:
            return sum(record.cached_tokens for record in self.billing)

    def ledger(self) -> list[BillingRecord]:
        """The billing ledger so far, in the order requests ended (a copy: safe to read while the
        server answers others)."""
        with self._lock:
            return list(self.billing)

    def most_at_once(self) -> int:
        """The most chat requests that were being answered at one time (the ledger's start and end
        times): how many calls a client really ran side by side."""
        with self._lock:
            spans = [(r.started_at, r.started_at + r.seconds) for r in self.billing if not r.batch]
        # An answer that ended as another began did not overlap it: ends sort before starts.
        moments = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
        most = running = 0
        for _, change in moments:
            running += change
            most = max(most, running)
        return most

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

    # -- internals -------------------------------------------------------------------------------

    def _arrive(self, body: dict[str, Any]) -> int:
        """Keep the request; its index names it in the billing ledger."""
        with self._lock:
            self.requests.append(body)
            return len(self.requests) - 1

    def _next_step(self, body: dict[str, Any]) -> Step | None:
        """The outage's step while there is one, else the script's next (a subclass may choose it
        from the request instead)."""
        with self._lock:
            if self._outage is not None:
                return self._outage
            return self._steps.popleft() if self._steps else None

    def set_outage(self, step: Fault | Slow | None) -> None:
        """Every request gets ``step`` (a 500, a 429 storm, a first token that never comes) until
        the outage is cleared with None; the script waits meanwhile."""
        with self._lock:
            self._outage = step

    def _pace(self, reply: Reply, body: dict[str, Any] | None = None) -> tuple[float, float]:
        """(scaled seconds to the first token, scaled seconds per token) for one answer, at the
        request's tier (``flex.flex_pace``)."""
        with self._lock:
            first, rate = self.profile.draw(self._rng)
            scale = self.time_scale
        if reply.first_token_s is not None:
            first = reply.first_token_s
        if reply.tokens_per_s is not None:
            rate = reply.tokens_per_s
        per_token = 0.0 if math.isinf(rate) or rate <= 0 else 1.0 / rate
        return flex_pace(body or {}, first * scale, per_token * scale)

    def _record(self, record: BillingRecord) -> None:
        with self._lock:
            self.billing.append(self._stamped(record, self.requests[record.request]))

    def _record_batch(self, body: dict[str, Any], billed: Billed, custom_id: str) -> None:
        with self._lock:
            index = len(self.requests)
            self.requests.append({"batch_custom_id": custom_id})
            record = BillingRecord(
                index, False, billed.prompt_tokens, billed.completion_tokens, "complete", 0.0, time.monotonic(), True
            )
            self.billing.append(self._stamped(record, body, billed.cached_tokens))

    @staticmethod
    def _stamped(record: BillingRecord, body: dict[str, Any], cached_tokens: int | None = None) -> BillingRecord:
        """The ledger's fields of ``record`` from the request that made it: model, user, cached tokens."""
        model = str(body.get("model", ""))
        cached = record.cached_tokens if cached_tokens is None else cached_tokens
        return replace(record, model=model, user=billed_user(body), cached_tokens=cached)

    def _cached_tokens(self, body: dict[str, Any], reply: Reply) -> int:
        """What the prompt cache serves of a request the provider now computes (and caches)."""
        prompt_tokens = reply.prompt_tokens if reply.prompt_tokens is not None else prompt_tokens_of(body)
        return self.prompt_cache.serve(body, prompt_tokens)

    def _refused_key(self, authorization: str | None) -> dict[str, Any] | None:
        """Keep the request's key; the 401 body when the account does not accept it."""
        key = str(authorization or "").removeprefix("Bearer ").strip()
        with self._lock:
            self.keys_seen.append(key)
        if self.api_keys is None or key in self.api_keys:
            return None
        # As OpenAI answers a wrong key: 401 before anything is counted or billed.
        message = "Incorrect API key provided. You can find your API key in your account settings."
        return {"error": {"message": message, "type": "invalid_request_error", "code": "invalid_api_key"}}

    def _rate_limited(self, body: dict[str, Any], counted: bool = True) -> tuple[dict[str, str], dict[str, Any] | None]:
        """The x-ratelimit headers, and the 429 body when the account's limit refuses the request;
        not ``counted``: a request refused for another reason (a scripted 429), which the account
        does not count either."""
        buckets = self._buckets
        if buckets is None:
            return {}, None
        cost = prompt_tokens_of(body) + (token_limit(body) or buckets.limit.default_max_tokens)
        decision = buckets.take(cost if counted else -1)
        limit_headers = decision.headers if self.limit_headers else {}
        if decision.refused is None:
            return ({} if self.limit_headers == "refusals" else limit_headers), None
        limit = buckets.limit
        if decision.refused == "tokens":
            what = f"tokens per min (TPM): Limit {limit.tokens_per_minute}, Requested {cost}"
        else:
            what = f"requests per min (RPM): Limit {limit.requests_per_minute}"
        headers = {
            **limit_headers,
            "retry-after": str(max(1, math.ceil(decision.wait_s))),
            "retry-after-ms": str(max(1, math.ceil(decision.wait_s * 1000))),
        }
        message = (
            f"Rate limit reached for {body.get('model', 'fake-model')} in organization org-fake on {what}. "
            f"Please try again in {decision.wait_s:.3g}s."
        )
        error = {"message": message, "type": decision.refused, "param": None, "code": "rate_limit_exceeded"}
        return headers, {"error": error}


class FakeOpenAIHandler(BaseHTTPRequestHandler):
    """One connection to the fake: the Chat Completions, Files and Batches routes, as
    ``FakeOpenAIServer`` (its ``server.fake``) scripts, paces and bills them."""

    protocol_version = "HTTP/1.1"

    @property
    def fake(self) -> FakeOpenAIServer:
        server: _QuietServer = self.server  # type: ignore[assignment]
        return server.fake

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes: without TCP_NODELAY, Nagle's
        # algorithm and delayed ACKs add ~40 ms to every request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        refused = self.fake._refused_key(self.headers.get("authorization"))
        if refused is not None:
            self._send(401, refused)
            return
        parts = path.split("/")
        if parts[-1] == "batches":
            query = parse_qs(self.path.split("?", 1)[1] if "?" in self.path else "")
            after, limit = (query.get(name, [None])[-1] for name in ("after", "limit"))
            self._answer(*self.fake.batches.list_jobs(after, limit))
            return
        if len(parts) >= 2 and parts[-2] == "batches":
            self._answer(*self.fake.batches.retrieve(parts[-1]))
            return
        content = len(parts) >= 3 and parts[-3] == "files" and parts[-1] == "content"
        if content or (len(parts) >= 2 and parts[-2] == "files"):
            file_id = parts[-2] if content else parts[-1]
            stored = self.fake.batches.file(file_id)
            if stored is None:
                missing = {"message": f"No such File object: {file_id}", "type": "invalid_request_error"}
                self._send(404, {"error": missing})
            elif content:
                self._send_bytes(stored.data)
            else:
                self._send(200, stored.as_object())
            return
        self._send(404, {"error": {"message": f"unknown path {self.path}", "type": "not_found"}})

    def _batch_api(self, path: str, raw: bytes) -> None:
        refused = self.fake._refused_key(self.headers.get("authorization"))
        if refused is not None:
            self._send(401, refused)
            return
        if path.endswith("/files"):
            self._answer(*self.fake.batches.upload(str(self.headers.get("content-type") or ""), raw))
            return
        if path.endswith("/cancel"):
            self._answer(*self.fake.batches.cancel(path.split("/")[-2]))
            return
        body = self._json_body(raw)
        if body is not None:
            self._answer(*self.fake.batches.create(body, self.fake.token_fields))

    def _answer(self, status: int, payload: dict[str, Any]) -> None:
        """A Batch API answer; ``CLOSED``: the connection closes with none (a lost answer)."""
        if status == CLOSED:
            self._drop()
            return
        self._send(status, payload)

    def _json_body(self, raw: bytes) -> dict[str, Any] | None:
        """The request's JSON object, or None after answering 400 (as the provider does)."""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._send(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return None
        return body

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.endswith(("/files", "/batches")) or (path.endswith("/cancel") and "/batches/" in path):
            self._batch_api(path, raw)
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"unknown path {self.path}", "type": "not_found"}})
            return
        body = self._json_body(raw)
        if body is None:
            return
        refused = unsupported_token_field(body, self.fake.token_fields)
        if refused is not None:
            self._send(400, {"error": {"message": refused, "type": "invalid_request_error"}})
            return
        refused_tier = unknown_tier(body)
        if refused_tier is not None:
            self._send(400, {"error": {"message": refused_tier, "type": "invalid_request_error"}})
            return
        refused_key = self.fake._refused_key(self.headers.get("authorization"))
        if refused_key is not None:
            self._send(401, refused_key)
            return
        index = self.fake._arrive(body)
        if self._flex_refused(index, body):
            return
        step = self.fake._next_step(body)
        scripted = step.then if isinstance(step, Slow) else step
        scripted_429 = isinstance(scripted, Fault) and scripted.status == 429
        limit_headers, limited = self.fake._rate_limited(body, counted=not scripted_429)
        stream = bool(body.get("stream"))
        if limited is not None:
            self.fake._record(BillingRecord(index, stream, 0, 0, "rate_limited", 0.0, time.monotonic()))
            self._send(429, limited, limit_headers)
            return
        if isinstance(step, Slow):
            time.sleep(step.seconds * self.fake.time_scale)
            step = step.then
        if isinstance(step, Fault):
            self.fake._record(BillingRecord(index, stream, 0, 0, "fault", 0.0, time.monotonic()))
            self._fault(step, limit_headers)
            return
        reply = step or default_reply(body)
        cached = self.fake._cached_tokens(body, reply)
        if stream:
            self._stream(index, body, reply, limit_headers, cached)
        else:
            self._whole(index, body, reply, limit_headers, cached)

    def _flex_refused(self, index: int, body: dict[str, Any]) -> bool:
        """Flex short of capacity: its 429, not counted against the account, not billed."""
        limit_headers, _ = self.fake._rate_limited(body, counted=False)
        refusal = flex_refusal(body, self.fake.flex_capacity, limit_headers)
        if refusal is None:
            return False
        headers, payload = refusal
        self.fake._record(
            BillingRecord(index, bool(body.get("stream")), 0, 0, "rate_limited", 0.0, time.monotonic(), False, "flex")
        )
        self._send(429, payload, headers)
        return True

    def _fault(self, step: Fault, limit_headers: dict[str, str]) -> None:
        headers = dict(limit_headers)
        if step.retry_after is not None:
            headers["retry-after"] = f"{step.retry_after:g}"
        kind = "rate_limit_exceeded" if step.status == 429 else "server_error"
        if 400 <= step.status < 429:
            kind = "invalid_request_error"
        self._send(step.status, {"error": {"message": step.message, "type": kind, "code": kind}}, headers)

    def _whole(self, index: int, body: dict[str, Any], reply: Reply, headers: dict[str, str], cached: int) -> None:
        """Generate the whole answer, then send it: a client that left meanwhile is billed all
        the same (the provider cannot know until it writes)."""
        started = time.monotonic()
        billed = bill(body, reply, cached)
        first, per_token = self.fake._pace(reply, body)
        tokens = billed.completion_tokens
        if reply.drop_after_tokens is not None:
            generated = min(tokens, reply.drop_after_tokens)
            time.sleep(first + generated * per_token)
            self._bill(index, False, billed, generated, "dropped", started, body)
            self._drop()
            return
        stall = reply.stall_s * self.fake.time_scale if reply.stall_after_tokens is not None else 0.0
        time.sleep(first + tokens * per_token + stall)
        ended: Ended = "complete"
        try:
            self._send(200, with_tier(completion(body, reply, cached), body), headers, raise_gone=True)
        except ClientGone:
            ended = "client_closed"
        self._bill(index, False, billed, tokens, ended, started, body)

    def _stream(self, index: int, body: dict[str, Any], reply: Reply, headers: dict[str, str], cached: int) -> None:
        """Headers at once, then the chunks as the tokens are written; stops at the first
        write the client is no longer there for, or as soon as it leaves while the first
        token is awaited (as during a stall), billed what it had generated."""
        started = time.monotonic()
        billed = bill(body, reply, cached)
        chunks = StreamChunks(body, billed)
        pieces = chunks.pieces or ([""] if chunks.kind == "tool" else [])
        first, per_token = self.fake._pace(reply, body)
        generated = 0
        first_token_at = 0.0
        ended: Ended = "complete"
        try:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self._flush_gone()
            self._pause(first)
            self._event(with_tier(chunks.role(), body))
            for position, text in self._paced(pieces, per_token, reply):
                first_token_at = first_token_at or time.monotonic()
                if reply.drop_after_tokens is not None and position >= reply.drop_after_tokens:
                    ended = "dropped"
                    self._drop()
                    return
                self._event(with_tier(chunks.piece(position, "".join(text)), body))
                generated = position + len(text)
            self._event(with_tier(chunks.finish(), body))
            usage = chunks.usage()
            if usage is not None:
                self._event(with_tier(usage, body))
            self._write_chunk(b"data: [DONE]\n\n")
            self._write_chunk(b"")
        except ClientGone:
            ended = "client_closed"
            self.close_connection = True
        finally:
            tokens = billed.completion_tokens if ended == "complete" else generated
            self._bill(index, True, billed, tokens, ended, started, body, first_token_at)

    def _bill(
        self,
        index: int,
        stream: bool,
        billed: Billed,
        tokens: int,
        ended: Ended,
        started: float,
        body: dict[str, Any],
        first_token_at: float = 0.0,
    ) -> None:
        """The request's record: its prompt as billed, the ``tokens`` of the answer it generated."""
        elapsed = time.monotonic() - started
        record = BillingRecord(index, stream, billed.prompt_tokens, tokens, ended, elapsed, started)
        stamped = replace(
            record, cached_tokens=billed.cached_tokens, service_tier=tier_of(body), first_token_at=first_token_at
        )
        self.fake._record(stamped)

    def _paced(self, pieces: list[str], per_token: float, reply: Reply) -> Iterator[tuple[int, list[str]]]:
        """(first token's position, the tokens' texts) as they come due: one token per chunk,
        or, when tokens come faster than ``chunk_interval_s`` apart (a scaled-down test), the
        tokens due since the last chunk together, as a network write would carry them. The
        stall and the drop happen exactly at their token; a client that leaves during the
        stall ends the answer then, billed what had been written."""
        started = time.monotonic()
        position = 0
        paused = 0.0
        while position < len(pieces):
            if reply.stall_after_tokens is not None and position == reply.stall_after_tokens:
                self._pause(reply.stall_s * self.fake.time_scale)
                paused += reply.stall_s * self.fake.time_scale
            elapsed = time.monotonic() - started - paused
            if per_token <= 0 or per_token >= self.fake.chunk_interval_s:
                time.sleep(max(0.0, position * per_token - elapsed))
                yield position, [pieces[position]]
                position += 1
                continue
            due = min(len(pieces), int(elapsed / per_token) + 1)
            for stop in (reply.stall_after_tokens, reply.drop_after_tokens):
                if stop is not None and position < stop < due:
                    due = stop  # a stall or a drop comes exactly after its token
            if due <= position:
                time.sleep(max(self.fake.chunk_interval_s, (position + 1) * per_token - elapsed))
                continue
            yield position, pieces[position:due]
            position = due

    def _pause(self, seconds: float) -> None:
        """Write nothing for ``seconds``, or until the client closes the connection."""
        ends = time.monotonic() + seconds
        while (left := ends - time.monotonic()) > 0:
            try:
                readable, _, _ = select.select([self.connection], [], [], left)
            except (OSError, ValueError) as error:
                raise ClientGone() from error
            if readable and self._peer_closed():
                raise ClientGone()
            if readable:  # the client wrote something (it never does mid-answer): keep waiting
                time.sleep(min(left, MIN_CHUNK_INTERVAL_S))

    def _event(self, payload: dict[str, Any]) -> None:
        """One event of the answer. A provider notices a client that closed the connection
        when it closes, not at a later write (the first write into a closed connection still
        succeeds): so does this one, before each event. A client may close once it has the
        answer's last event, before ``[DONE]``."""
        if self._peer_closed():
            raise ClientGone()
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self._write_chunk(b"data: " + data + b"\n\n")

    def _write_chunk(self, data: bytes) -> None:
        """One HTTP/1.1 chunk (empty: the last one)."""
        self._flush_gone(b"%x\r\n%s\r\n" % (len(data), data))

    def _peer_closed(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def _flush_gone(self, data: bytes = b"") -> None:
        """``data`` written and what was written before flushed; a client that has gone raises ``ClientGone``."""
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError) as error:
            raise ClientGone() from error

    def _drop(self) -> None:
        """Close the connection abruptly, as a provider's load balancer does mid-answer."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _send_bytes(self, data: bytes) -> None:
        self.send_response(200)
        self.send_header("content-type", "application/octet-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _send(
        self,
        status: int,
        payload: dict[str, Any],
        headers: dict[str, str] | None = None,
        *,
        raise_gone: bool = False,
    ) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError) as error:
            if raise_gone:
                raise ClientGone() from error  # the client gave up (its timeout)
