"""Text pieces in, ``delta`` frames out at most about ten a second (docs/api.md#websocket).

A model streams a token or two per piece, tens a second; a frame per piece would cost a WebSocket
message each (API Gateway bills per message) and flood a slow client. The coalescer sends the first
piece at once (the first words matter most), then holds what arrives until ``min_interval_s`` has
passed since the last frame, and sends all of it as one frame. Whatever it holds goes out before
the answer's ``done`` (``LiveAnswer.done``) and before a new attempt restarts at offset 0.

Once the answer is stored, ``settle`` makes the words a client has (the deltas applied by offset)
equal the stored text exactly: the rest of it from where the words stopped, or, when what was
shown is not a prefix of it (an attempt that failed, a caller that rewrote the text), one delta
from the first character that differs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from .channel import LiveChannel
from .frames import DeltaFrame, ProgressFrame, Seq, done_frame, error_frame

DELTAS_PER_SECOND = 10


class DeltaCoalescer:
    """The deltas of one answer being written (one attempt after another); ``clock`` in seconds."""

    def __init__(
        self,
        emit: Callable[[DeltaFrame], None],
        session_id: str,
        seq: Seq,
        clock: Callable[[], float],
        min_interval_s: float = 1 / DELTAS_PER_SECOND,
    ) -> None:
        self._emit = emit
        self._session_id = session_id
        self._seq = seq
        self._clock = clock
        self._interval = min_interval_s
        self._offset = 0  # where the held text starts in the answer
        self._held: list[str] = []
        self._last: float | None = None
        self._shown = ""  # the answer as a client applying every delta sent has it

    def add(self, text: str) -> None:
        if not text:
            return
        self._held.append(text)
        now = self._clock()
        if self._last is None or now - self._last >= self._interval:
            self.flush()

    def flush(self) -> None:
        """Send what is held now, as one frame (nothing when nothing is held)."""
        text = "".join(self._held)
        if not text:
            return
        self._held.clear()
        self._send(self._offset, text)
        self._offset += len(text)
        self._last = self._clock()

    def settle(self, text: str) -> None:
        """Send what makes the client's words equal ``text`` (nothing when they already are)."""
        self.flush()
        shown = self._shown
        if shown == text:
            return
        common = next(
            (i for i, (a, b) in enumerate(zip(shown, text, strict=False)) if a != b), min(len(shown), len(text))
        )
        self._send(common, text[common:])
        self._offset = len(text)

    def _send(self, offset: int, text: str) -> None:
        self._emit(DeltaFrame(sessionId=self._session_id, seq=self._seq, offset=offset, text=text))
        self._shown = self._shown[:offset] + text

    def restart(self) -> None:
        """A new attempt: its words replace the failed one's from offset 0; what the failed
        attempt still held is dropped, never sent."""
        self._held.clear()
        self._offset = 0
        self._last = None  # its first words go at once too


class LiveAnswer:
    """One answer's frames to its user's connections: words through the coalescer, the
    interview's steps, and the last frame (``done`` or ``error``), which flushes the words first."""

    def __init__(self, channel: LiveChannel, user_id: str, session_id: str, seq: Seq, clock: Callable[[], float]):
        self._channel = channel
        self._user_id = user_id
        self._session_id = session_id
        self._seq = seq
        self.words = DeltaCoalescer(lambda frame: channel.send(user_id, frame), session_id, seq, clock)

    def write(self, text: str) -> None:
        self.words.add(text)

    def restart(self) -> None:
        """A new attempt: its words start again at offset 0 (``DeltaCoalescer.restart``)."""
        self.words.restart()

    def settle(self, text: str) -> None:
        """The stored text: the client's words made equal to it, before its ``done``."""
        self.words.settle(text)

    def progress(self, agent: str, step: str, state: Literal["started", "done"]) -> None:
        self.words.flush()
        frame = ProgressFrame(sessionId=self._session_id, seq=self._seq, agent=agent, step=step, state=state)
        self._channel.send(self._user_id, frame)

    def done(self, answer: dict[str, Any]) -> None:
        self.words.flush()
        self._channel.send(self._user_id, done_frame(self._session_id, self._seq, answer))

    def error(self, code: str, message: str) -> None:
        self.words.flush()
        self._channel.send(self._user_id, error_frame(code, message, session_id=self._session_id, seq=self._seq))
