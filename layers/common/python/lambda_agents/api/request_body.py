"""What a request body must be before any route sees it: JSON by its media type, within size,
and a JSON object that Python, pydantic and DynamoDB can all hold.

Every check answers a typed ``BodyRefused`` (a 4xx naming the problem), never a parser's own
exception: ``json.loads`` raises ``ValueError`` for integers past Python's digit limit and
``RecursionError`` for deep nesting, and accepts ``NaN``, ``Infinity``, ``1e999`` and lone
UTF-16 surrogates, none of which a client can mean or DynamoDB can store.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

JSON_MEDIA_TYPE = "application/json"
# Above any valid body of the bundle (the judge's 200,000-character output with its rules, even
# written with \\u escapes) and well under Lambda's 6 MB request limit; pydantic's work on a body
# of unknown keys grows with its size, so the cap also bounds the time a refusal costs.
MAX_BODY_BYTES = 2 * 1024 * 1024
# DynamoDB refuses documents nested deeper than 32 levels; no request model comes close.
MAX_NESTING = 32
# RFC 9110 8.3.1: type "/" subtype, both tokens (case-insensitive), then optional parameters.
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_MEDIA_TYPE = re.compile(rf"({_TOKEN}/{_TOKEN})[ \t]*(;.*)?", re.DOTALL)
_SURROGATE = re.compile(r"[\ud800-\udfff]")


class BodyRefused(Exception):
    """The request cannot reach a route; ``status`` / ``code`` / ``message`` / ``details`` are the answer."""

    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details


def media_type(content_type: str) -> str | None:
    """The lower-cased ``type/subtype`` of a Content-Type value; None when it is not a media type."""
    matched = _MEDIA_TYPE.fullmatch(content_type.strip())
    return matched.group(1).lower() if matched else None


def excerpt(text: str, limit: int = 64) -> str:
    """``text`` as a repr of at most ``limit`` characters, saying how long it was when cut."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


SEND_JSON = f"send the body as JSON with the header `Content-Type: {JSON_MEDIA_TYPE}`"
FORM_MEDIA_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data"})


def check_media_type(content_type: str | None) -> None:
    """A body must say it is JSON: without a Content-Type (RFC 9110 lets a server take it as
    octet-stream, not guess) or with another media type it is a 415 that says exactly what to send.
    A form encoding is named as what ``curl -d`` (and an HTML form) sends unless told otherwise,
    the usual first mistake."""
    if content_type is None or not content_type.strip():
        raise BodyRefused(415, "UNSUPPORTED_MEDIA_TYPE", f"{SEND_JSON}; the request has no Content-Type")
    essence = media_type(content_type)
    if essence == JSON_MEDIA_TYPE:
        return
    got = f"the request says {excerpt(content_type, 100)}"
    if essence in FORM_MEDIA_TYPES:
        got += f", a form encoding (what `curl -d` sends unless given -H 'Content-Type: {JSON_MEDIA_TYPE}')"
    raise BodyRefused(415, "UNSUPPORTED_MEDIA_TYPE", f"{SEND_JSON}; {got}")


def check_size(text: str) -> None:
    # A character is at most 4 UTF-8 bytes: only a body near the cap needs encoding to know.
    if len(text) * 4 <= MAX_BODY_BYTES:
        return
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BODY_BYTES:
        raise BodyRefused(
            413, "PAYLOAD_TOO_LARGE", f"the request body has {size} bytes; at most {MAX_BODY_BYTES} are accepted"
        )


def parse_json_object(text: str) -> dict[str, Any]:
    """The body as a JSON object, or ``BodyRefused`` (400) naming what Python or DynamoDB refuse."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno} column {error.colno}"
        raise _invalid(f"the request body is not JSON ({error.msg} at {where})") from None
    except _NotJson as error:
        raise _invalid(str(error)) from None
    except RecursionError:
        raise _invalid(f"the request body is nested deeper than {MAX_NESTING} levels") from None
    except ValueError as error:  # int(): more digits than Python converts (sys.get_int_max_str_digits)
        raise _invalid(f"the request body holds a number Python cannot read ({str(error)[:80]})") from None
    if not isinstance(value, dict):
        raise _invalid("the request body must be a JSON object")
    _check_values(value)
    return value


class _NotJson(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NotJson(f"the request body holds {name}, which is not a JSON number")


def _finite_float(literal: str) -> float:
    number = float(literal)
    if not math.isfinite(number):
        raise _NotJson(f"the request body holds the number {literal[:40]}, too large for a float")
    return number


def _check_values(root: dict[str, Any]) -> None:
    """Nesting within MAX_NESTING and no lone surrogate in any key or string, naming where
    (iteratively: the structure may be nearly as deep as the parser's recursion limit)."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(root, ("body",))]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                raise _at(path, "holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape)")
            continue
        if not isinstance(value, dict | list):
            continue
        if len(path) > MAX_NESTING:
            raise _invalid(f"the request body is nested deeper than {MAX_NESTING} levels")
        if isinstance(value, list):
            stack.extend((item, (*path, f"[{index}]")) for index, item in enumerate(value))
            continue
        for key, item in value.items():
            if _SURROGATE.search(key):
                raise _at(path, "has a key with a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape)")
            stack.append((item, (*path, key)))


def _at(path: tuple[str, ...], problem: str) -> BodyRefused:
    where = ".".join(path).replace(".[", "[")
    if len(where) > 120:
        where = f"{where[:120]}..."
    return BodyRefused(400, "VALIDATION_ERROR", f"invalid {where}: {problem}")


def _invalid(message: str) -> BodyRefused:
    return BodyRefused(400, "VALIDATION_ERROR", f"invalid body: {message}")
