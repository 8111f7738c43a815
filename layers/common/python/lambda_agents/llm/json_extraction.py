"""Find the JSON answer in a model's free text (the prompted strategy and spec 004's
``parseStructuredOutput``).

Order: the whole text, then fenced blocks (the last that parses wins: models restate the
example first and give the answer last), then top-level JSON values found by one forward scan
(the last object wins when several are concatenated), then first brace to last brace.
Never raises on non-JSON: returns None. Input past ``max_chars`` is rejected (None).
"""

from __future__ import annotations

import json
import re
from typing import Any

DEFAULT_MAX_CHARS = 256 * 1024
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\r?\n(.*?)```", re.DOTALL)
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
    for match in reversed(list(_FENCE.finditer(stripped))):
        value = _loads(match.group(2).strip())
        if value is not _MISSING:
            return value
    scanned = _last_top_level_value(stripped)
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


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _MISSING


def _last_top_level_value(text: str) -> Any:
    """Scan left to right; after a value decodes, continue after its end, so each character is
    decoded at most once on the success path. Failed starts skip one character; the number of
    failed starts is bounded so adversarial input ("{{{{...") stays cheap."""
    found: Any = _MISSING
    found_object: Any = _MISSING
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
            position = start + 1
            continue
        found = value
        if isinstance(value, dict):
            found_object = value
        position = end
    return found_object if found_object is not _MISSING else found
