"""The error envelope ``{"error": {"code", "message", "details"?}}``, bounded in size.

An error answer never grows with the request: a body of 30,000 unknown keys once gave a 400 of
7 MB, past Lambda's 6 MB response limit. Messages are cut to MAX_MESSAGE_CHARS, and details keep
at most MAX_DETAIL_ITEMS items per list or object and MAX_DETAIL_CHARS per string; when anything
was cut the error says ``"truncated": true``. Whatever the details, the envelope stays under
MAX_ERROR_BYTES, counted in UTF-8 bytes as it goes out (the details are dropped rather than pass it);
its text keeps its characters as they are (``api.answer_json``). The work is bounded by that limit
too: the cut stops as soon as the text it kept passes MAX_ERROR_BYTES, so details nested wide at
every level (20 items at each of 6 levels are 64 million strings) are dropped without being walked.
"""

from __future__ import annotations

from typing import Any

from .answer_json import answer_json, utf8_size

MAX_MESSAGE_CHARS = 1000
MAX_DETAIL_ITEMS = 20
MAX_DETAIL_CHARS = 300
MAX_DETAIL_DEPTH = 6
MAX_ERROR_BYTES = 32 * 1024


def error_body(code: str, message: str, details: Any = None) -> str:
    """The JSON text of one error answer, at most MAX_ERROR_BYTES of UTF-8."""
    cut = _Cut()
    payload: dict[str, Any] = {"code": code, "message": cut.text(message, MAX_MESSAGE_CHARS)}
    if details is not None:
        try:
            payload["details"] = cut.value(details, 0)
        except _PastTheLimit:
            cut.happened = True
    if cut.happened:
        payload["truncated"] = True
    body = _dumps(payload)
    if utf8_size(body) > MAX_ERROR_BYTES:  # details nested wide at every level
        payload.pop("details", None)
        payload["truncated"] = True
        body = _dumps(payload)
    return body


def _dumps(payload: dict[str, Any]) -> str:
    return answer_json({"error": payload}, default=str)


class _PastTheLimit(Exception):
    """The text kept so far already passes MAX_ERROR_BYTES: the details cannot fit."""


class _Cut:
    def __init__(self) -> None:
        self.happened = False
        # A lower bound of the envelope's size: every string kept appears in it at least in its
        # UTF-8 bytes (escaping only adds), so past the limit the details are certain not to fit.
        self.kept_bytes = 0

    def text(self, value: str, limit: int) -> str:
        if len(value) > limit:
            self.happened = True
            value = f"{value[: limit - 30]}... ({len(value)} characters)"
        self._spend(utf8_size(value))
        return value

    def _spend(self, size: int) -> None:
        self.kept_bytes += size
        if self.kept_bytes > MAX_ERROR_BYTES:
            raise _PastTheLimit

    def value(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return self.text(value, MAX_DETAIL_CHARS)
        if not isinstance(value, dict | list | tuple):
            if isinstance(value, int | float | bool) or value is None:
                self._spend(len(str(value)))  # at most the length of its JSON ("null", "true", digits)
                return value
            return self.text(str(value), 100)
        if depth >= MAX_DETAIL_DEPTH:
            self.happened = True
            self._spend(4)  # null
            return None
        if len(value) > MAX_DETAIL_ITEMS:
            self.happened = True
        self._spend(2 + min(len(value), MAX_DETAIL_ITEMS) - 1)  # brackets and the separators between items
        if isinstance(value, dict):
            items = list(value.items())[:MAX_DETAIL_ITEMS]
            return {self.text(str(key), 100): self.value(item, depth + 1) for key, item in items}
        return [self.value(item, depth + 1) for item in list(value)[:MAX_DETAIL_ITEMS]]
