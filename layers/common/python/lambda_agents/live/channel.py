"""The ``LiveChannel`` port: a frame to every open WebSocket connection of a user.

``SocketChannel`` is the production one: it lists the user's connections (the connections table)
and posts each frame to each of them (API Gateway's ``@connections``), on a background thread, so
a slow endpoint never slows the model's stream: ``send`` only queues. A connection that is gone
(410) is no longer pushed to for the answer, and deleted unless it is younger than the directory's
handshake grace (API Gateway answers 410 while a connection's ``$connect`` still runs: such a
connection is listed again for the answer's ``done`` and the next answers); any other failure is
logged and counted; neither ever fails the caller, whose answer is stored and readable by GET
whatever happens to its frames.
Deltas queued behind a slow endpoint are merged into one (same answer, contiguous text), so the
queue stays short and nothing is lost; past ``max_pending`` frames a delta is dropped (counted),
never a ``done`` or an ``error``, which carry the whole outcome. Those last frames of an answer
wait, up to ``flush_timeout_s`` (2 s: a REST answer waits on it, inside API Gateway's 29 s), until
everything queued is posted: a Lambda function freezes when it returns, and its frames must be out
before. A frame still unposted then goes when the container next runs. A user's connection list
is read afresh for an answer's first frame (a client that connected since the user's last answer
gets all of its words) and for its last (a client that reconnected meanwhile gets it), in between
at most every ``refresh_s``.
What happened to the frames is counted (``PushCounts``) and handed, since the last time it was
asked, to the function's metrics (``take_counts``, ``push_metrics``): a frame is counted when the
background thread posts it, so one posted after an invocation returned counts in the next.

``NoLiveChannel`` is the channel of a deployment without a WebSocket API (REST only) and of tests
that need none: frames go nowhere, answers are stored as always.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from ..observability import logger
from .frames import MAX_MESSAGE_BYTES, DeltaFrame, DoneFrame, ErrorFrame, Frame, Seq, encoded

MERGED_DELTA_MAX_CHARS = 16_000  # a merged delta stays well under the 128 KB message limit


class ConnectionGone(Exception):
    """The connection is closed (API Gateway's 410 GoneException)."""


class ConnectionDirectory(Protocol):
    def connections_of(self, user_id: str) -> list[str]: ...

    def remove_gone(self, connection_id: str) -> bool:
        """Delete a connection a post found gone; False when it is kept (too young to be closed)."""
        ...


class FramePoster(Protocol):
    def post(self, connection_id: str, data: bytes) -> None:
        """Post one message; ``ConnectionGone`` when the connection is closed."""
        ...


class LiveChannel(Protocol):
    def send(self, user_id: str, frame: Frame) -> None: ...

    def flush(self) -> None: ...

    def take_counts(self) -> PushCounts:
        """What happened to the frames since the last call (the function's metrics report it)."""
        ...


class NoLiveChannel:
    """No WebSocket API: frames go nowhere."""

    def send(self, user_id: str, frame: Frame) -> None:
        return None

    def flush(self) -> None:
        return None

    def take_counts(self) -> PushCounts:
        return PushCounts()


@dataclass
class PushCounts:
    """Frames posted (one per connection), connections found gone (410), posts that failed any
    other way (a frame a directory read lost included), and frames dropped (never posted: a delta
    behind a full queue, a frame over 128 KB)."""

    posted: int = 0
    gone: int = 0
    failed: int = 0
    dropped: int = 0


@dataclass
class _Cached:
    read_at: float
    answer: tuple[str | None, Seq | None]  # (sessionId, seq) of the frame it was read for
    connections: list[str] = field(default_factory=list)


class SocketChannel:
    def __init__(
        self,
        connections: ConnectionDirectory,
        poster: FramePoster,
        *,
        clock: Callable[[], float] = time.monotonic,
        refresh_s: float = 5.0,
        flush_timeout_s: float = 2.0,
        max_pending: int = 256,
    ) -> None:
        self._connections = connections
        self._poster = poster
        self._clock = clock
        self._refresh_s = refresh_s
        self._flush_timeout_s = flush_timeout_s
        self._max_pending = max_pending
        self._pending: deque[tuple[str, Frame]] = deque()
        self._busy = False
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._cache: dict[str, _Cached] = {}
        self.counts = PushCounts()  # since the channel was made
        self._since_taken = PushCounts()
        self._counting = threading.Lock()  # the caller's thread and the posting one both count

    def send(self, user_id: str, frame: Frame) -> None:
        last = isinstance(frame, DoneFrame | ErrorFrame)
        with self._changed:
            if not self._merged(user_id, frame):
                if not last and len(self._pending) >= self._max_pending:
                    self._count("dropped")
                    logger.warning("live frame dropped: the sender is behind", extra={"pending": len(self._pending)})
                    return
                self._pending.append((user_id, frame))
            self._start()
            self._changed.notify_all()
        if last:
            self.flush()

    def take_counts(self) -> PushCounts:
        with self._counting:
            taken, self._since_taken = self._since_taken, PushCounts()
        return taken

    def _count(self, what: Literal["posted", "gone", "failed", "dropped"]) -> None:
        with self._counting:
            for counts in (self.counts, self._since_taken):
                setattr(counts, what, getattr(counts, what) + 1)

    def flush(self) -> None:
        """Wait until every queued frame is posted, at most ``flush_timeout_s``."""
        ends = time.monotonic() + self._flush_timeout_s
        with self._changed:
            while self._pending or self._busy:
                left = ends - time.monotonic()
                if left <= 0:
                    logger.warning("live frames not posted in time", extra={"pending": len(self._pending)})
                    return
                self._changed.wait(left)

    def _merged(self, user_id: str, frame: Frame) -> bool:
        """Whether ``frame`` joined the last queued delta (same user and answer, contiguous)."""
        if not isinstance(frame, DeltaFrame) or not self._pending:
            return False
        queued_user, queued = self._pending[-1]
        if not (
            isinstance(queued, DeltaFrame)
            and queued_user == user_id
            and (queued.sessionId, queued.seq) == (frame.sessionId, frame.seq)
            and queued.offset + len(queued.text) == frame.offset
            and len(queued.text) + len(frame.text) <= MERGED_DELTA_MAX_CHARS
        ):
            return False
        self._pending[-1] = (user_id, queued.model_copy(update={"text": queued.text + frame.text}))
        return True

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="live-frames", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._pending:
                    self._busy = False
                    self._changed.notify_all()
                    self._changed.wait()
                user_id, frame = self._pending.popleft()
                self._busy = True
            try:
                self._post(user_id, frame)
            except Exception:  # a directory read failed: this frame is lost, the next may go
                self._count("failed")
                logger.exception("live frame not posted")

    def _post(self, user_id: str, frame: Frame) -> None:
        data = encoded(frame)
        if len(data) > MAX_MESSAGE_BYTES:  # API Gateway would refuse it (413): never posted
            self._count("dropped")
            logger.warning("live frame over 128 KB not posted", extra={"frame": frame.type, "bytes": len(data)})
            return
        for connection_id in self._connections_of(user_id, frame):
            try:
                self._poster.post(connection_id, data)
                self._count("posted")
            except ConnectionGone:
                self._forget(user_id, connection_id)
            except Exception as error:
                self._count("failed")
                logger.warning("live frame not posted", extra={"error_type": type(error).__name__})

    def _forget(self, user_id: str, connection_id: str) -> None:
        """A gone connection: not pushed to again until the list is read afresh, and deleted (unless
        the directory keeps a young one); a delete that fails is left to ``$disconnect`` and the
        item's TTL, and never keeps the frame from the other connections."""
        self._count("gone")
        self._cache[user_id].connections.remove(connection_id)
        try:
            deleted = self._connections.remove_gone(connection_id)
        except Exception as error:
            logger.warning("gone live connection not deleted", extra={"error_type": type(error).__name__})
            return
        if deleted:
            logger.info("live connection gone: deleted", extra={"connection_id": connection_id})
        else:
            logger.info("live connection not open yet: kept", extra={"connection_id": connection_id})

    def _connections_of(self, user_id: str, frame: Frame) -> list[str]:
        """The list the frame goes to: read afresh for an answer's first and last frames (module docstring)."""
        answer = (getattr(frame, "sessionId", None), getattr(frame, "seq", None))
        cached = self._cache.get(user_id)
        now = self._clock()
        last = isinstance(frame, DoneFrame | ErrorFrame)
        if last or cached is None or cached.answer != answer or now - cached.read_at >= self._refresh_s:
            cached = self._cache[user_id] = _Cached(now, answer, list(self._connections.connections_of(user_id)))
        return list(cached.connections)
