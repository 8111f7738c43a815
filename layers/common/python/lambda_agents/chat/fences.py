"""Markdown code fences in a model's answer, found in one linear pass
(docs/chat-and-templates.md#which-fence-is-parsed).

A fence opens on a line whose first non-blank characters are three or more backticks followed by
an info string without backticks (its first word, lower-cased, is the ``label``); it closes on a
line holding only at least as many backticks. A line like "use ```json fences" is prose, not a
fence; ```` ```json``` ```` on one line is inline code. A fence still open at the end of the text
runs to the end (``closed=False``): a truncated answer's last fence.

Only lines holding a backtick run are looked at, each once, and no regular expression
backtracks, so thousands of backticks or braces cost time linear in the text
(benchmarks/chat_bench.py).
Tilde fences are not recognised: the prompt asks for backticks and models use them.
"""

from __future__ import annotations

from dataclasses import dataclass

_BLANKS = " \t\r"


@dataclass(frozen=True)
class Fence:
    label: str
    body: str
    start: int  # offset of the opening line's first character
    end: int  # offset just past the closing line (its newline included), or len(text)
    closed: bool

    @property
    def json_like(self) -> bool:
        """A fence that is, or looks like, JSON: removed from the prose a client sees."""
        if self.label == "json" or not self.closed:
            return True
        return self.label == "" and self.body.lstrip().startswith(("{", "["))


def find_fences(text: str) -> list[Fence]:
    fences: list[Fence] = []
    length = len(text)
    position = 0  # always the start of a line not looked at yet
    opened: tuple[int, int, str, int] | None = None  # (start, ticks, label, body start)
    while position < length:
        # Only a line with a backtick run can open or close a fence: jump to the next run (str.find
        # runs in C), then look at its line once; the next search starts after that line.
        hit = text.find("```", position)
        if hit < 0:
            break
        line_start = text.rfind("\n", position, hit) + 1 or position
        newline = text.find("\n", hit)
        line_end = length if newline < 0 else newline + 1
        ticks, rest = _fence_line(text, line_start, line_end)
        if opened is None:
            if ticks >= 3 and "`" not in rest:
                words = rest.split(None, 1)
                opened = (line_start, ticks, words[0].lower() if words else "", line_end)
        elif ticks >= opened[1] and not rest:
            start, _, label, body_start = opened
            fences.append(Fence(label, text[body_start:line_start], start, line_end, closed=True))
            opened = None
        position = line_end
    if opened is not None:
        start, _, label, body_start = opened
        fences.append(Fence(label, text[body_start:], start, length, closed=False))
    return fences


def _fence_line(text: str, start: int, end: int) -> tuple[int, str]:
    """(number of leading backticks after blanks, the rest of the line, trimmed) for text[start:end]."""
    line = text[start:end]
    stripped = line.lstrip(_BLANKS)
    if not stripped.startswith("```"):
        return 0, ""
    after = stripped.lstrip("`")
    return len(stripped) - len(after), after.strip(_BLANKS + "\n")


def remove_fences(text: str, fences: list[Fence]) -> str:
    """``text`` without the given fences (in text order), blank runs collapsed, trimmed."""
    parts: list[str] = []
    position = 0
    for fence in sorted(fences, key=lambda f: f.start):
        parts.append(text[position : fence.start])
        position = fence.end
    parts.append(text[position:])
    kept = "".join(parts)
    lines = [line.rstrip() for line in kept.split("\n")]
    squeezed: list[str] = []
    for line in lines:
        if line or (squeezed and squeezed[-1]):
            squeezed.append(line)
    return "\n".join(squeezed).strip()
