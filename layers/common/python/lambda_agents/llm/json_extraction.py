"""Find the JSON answer in a model's free text (the prompted strategy, docs/engine.md#structured-output,
and the judge's prompted answers, docs/judge.md#json-in-free-text).

Order: the whole text, then fenced blocks (the last that parses wins: models restate the
example first and give the answer last), then top-level JSON values found by one forward scan
(the last object wins when several are concatenated), then first brace to last brace.
Never raises on non-JSON: returns None. Input past ``max_chars`` is rejected (None).

A truncated final answer yields None, never the earlier object the model quoted before it: when
the last JSON-looking fence does not parse, or an object opened after the last complete value
never closes, the text's answer is cut off, and acting on the quoted verdict would be acting on
someone else's (takt#25, #707). The caller then retries or falls through to its next stage.
"""

from __future__ import annotations

import json
import re
from typing import Any

DEFAULT_MAX_CHARS = 256 * 1024
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\r?\n(.*?)```", re.DOTALL)
_OPEN_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n[ \t]*[\[{]")
_DECODER = json.JSONDecoder()


def extract_json(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> Any | None:
    """The JSON value the text most plausibly answers with, or None."""
    if not isinstance(text, str) or len(text) > max_chars:
        return None
    stripped = text.strip()
    if not stripped:
        return None
    direct = _loads(stripped)
    if direct is not _MISSING:
        return direct
    every_fence = list(_FENCE.finditer(stripped))
    fences = [match for match in every_fence if _json_like_fence(match)]
    # An opener pairs with the next ```, so an unclosed one can only follow the last complete fence.
    opened = _OPEN_FENCE.search(stripped, every_fence[-1].end() if every_fence else 0)
    if opened is not None:
        # A JSON fence opened after the last complete one and never closed: its body is the
        # answer when it parses (the closing ``` alone was lost), else the answer is cut off.
        value = _loads(stripped[opened.end() - 1 :].rstrip().rstrip("`"))
        return None if value is _MISSING else value
    if fences:
        value = _loads(fences[-1].group(2).strip())
        # The answer's fence is the last one: when it is broken, an earlier fence is only the
        # example or a quote, so there is no answer to return.
        return None if value is _MISSING else value
    scanned = _last_top_level_value(stripped)
    if scanned is _TRUNCATED:
        return None
    if scanned is not _MISSING:
        return scanned
    start, end = stripped.find("{"), stripped.rfind("}")
    if 0 <= start < end:
        value = _loads(stripped[start : end + 1])
        if value is not _MISSING:
            return value
    return None


def extract_json_object(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> dict[str, Any] | None:
    value = extract_json(text, max_chars)
    return value if isinstance(value, dict) else None


class _Missing:
    pass


_MISSING: Any = _Missing()
_TRUNCATED: Any = _Missing()


def _json_like_fence(match: re.Match[str]) -> bool:
    """A ``json`` fence, or an unlabelled one whose body starts like JSON (not a code sample)."""
    label = match.group(1).lower()
    body = match.group(2).lstrip()
    return label == "json" or (label == "" and body[:1] in ("{", "["))


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _MISSING


def _last_top_level_value(text: str) -> Any:
    """Scan left to right; after a value decodes, continue after its end, so each character is
    decoded at most once on the success path. Failed starts skip one character; the number of
    failed starts is bounded so adversarial input ("{{{{...") stays cheap.

    ``_TRUNCATED`` when an object that failed to decode never closes before the end of the text:
    every value found after its start is a fragment of it, and every value before it an earlier
    object, not the answer. (A stray unbalanced ``{`` in prose is read the same way: the caller
    retries rather than acting on a guess.)"""
    found: Any = _MISSING
    found_object: Any = _MISSING
    failed_starts: list[int] = []
    position = 0
    failures = 0
    length = len(text)
    while position < length and failures < 64:
        brace = text.find("{", position)
        bracket = text.find("[", position)
        candidates = [index for index in (brace, bracket) if index >= 0]
        if not candidates:
            break
        start = min(candidates)
        try:
            value, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            failures += 1
            if text[start] == "{":
                failed_starts.append(start)
            position = start + 1
            continue
        found = value
        if isinstance(value, dict):
            found_object = value
        position = end
    if _opens_without_closing(text, failed_starts):
        return _TRUNCATED
    return found_object if found_object is not _MISSING else found


def _opens_without_closing(text: str, starts: list[int]) -> bool:
    """Whether one of the failed ``{`` starts is never balanced before the end of the text
    (string-aware). Linear: a start inside an already balanced span is skipped."""
    covered_until = -1
    for start in starts:
        if start <= covered_until:
            continue
        close = _balanced_end(text, start)
        if close is None:
            return True
        covered_until = close
    return False


def _balanced_end(text: str, start: int) -> int | None:
    depth = 0
    in_string = False
    escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return index
    return None
