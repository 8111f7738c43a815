"""A chat answer's prose on the user's sockets as the model writes it (docs/api.md#websocket).

The stored answer is ``compose_content``'s: the prose, trimmed, then the canonical ```json fence
(or no JSON at all when it was invalid). So while the model writes, only what is sure to be the
stored prose goes out: everything from the start of a line that opens a fence is held (a JSON
fence is never shown as it is written: its canonical form is stored), and so is whitespace at
either end (the stored prose is trimmed). Once the answer is stored, ``LiveAnswer.settle`` sends
the rest, so the words a client applied by offset equal the stored text exactly.
"""

from __future__ import annotations

from ..live import LiveAnswer

FENCE = "```"
_BLANKS = " \t\r"


class StreamedProse:
    """The chat's ``AnswerListener``: the answer's prose, up to its first fence, to ``live``."""

    def __init__(self, live: LiveAnswer) -> None:
        self._live = live
        self._text = ""
        self._searched = 0  # where the search for a fence goes on
        self._fenced = False
        self._shown = 0  # characters of the prose given to ``live``

    def attempt_started(self) -> None:
        self._text, self._searched, self._fenced, self._shown = "", 0, False, 0
        self._live.restart()

    def text(self, piece: str) -> None:
        if self._fenced:
            return
        self._text += piece
        prose = self._text[: self._prose_end()].strip()
        if len(prose) > self._shown:
            self._live.write(prose[self._shown :])
            self._shown = len(prose)

    def tool_arguments(self, index: int, name: str, piece: str) -> None:
        return None  # the chat calls no tools

    def _prose_end(self) -> int:
        """Where what is sure to be prose ends: the start of a fence's line, or of a line that may
        still become one (its backticks are still arriving), or the end of the text."""
        text = self._text
        while (hit := text.find(FENCE, self._searched)) >= 0:
            line_start = text.rfind("\n", 0, hit) + 1
            if not text[line_start:hit].strip(_BLANKS):
                self._fenced = True
                return line_start
            self._searched = hit + len(FENCE)
        self._searched = max(self._searched, len(text) - len(FENCE) + 1)
        ticks = text.rstrip("`")
        line_start = ticks.rfind("\n") + 1
        if len(ticks) < len(text) and not ticks[line_start:].strip(_BLANKS):
            return line_start
        return len(text)
