"""The JSON text of every answer body (docs/api.md#authentication-and-answers): characters as they are, in UTF-8.

Python's ``json.dumps`` writes ``\\u65e5\\u672c`` for ``日本`` unless told otherwise, and so does
Powertools' default serializer: valid JSON, but a Japanese answer read with curl, in a log or in a
browser's network tab is unreadable, and each character costs 6 bytes instead of 3. Every body
the API writes (the resolver's answers, the error envelope) goes through ``answer_json``, which
keeps them as they are; API Gateway sends the body's text as UTF-8, the one encoding JSON has
(RFC 8259 8.1), so ``Content-Type: application/json`` needs no charset.

The one exception is a string holding a lone UTF-16 surrogate (``\\ud800``-``\\udfff`` unpaired),
which has no UTF-8 form: a body holding one would fail to encode on its way out. Request bodies
refuse them (``api.request_body``), but a model's answer parsed from JSON can carry one; such a
body is written with every non-ASCII character escaped instead, which says the same thing.
"""

from __future__ import annotations

import json
import re
from typing import Any

_SURROGATE = re.compile(r"[\ud800-\udfff]")


def answer_json(value: Any, *, cls: type[json.JSONEncoder] | None = None, default: Any = None) -> str:
    """``value`` as compact JSON text with its characters as they are (module docstring)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), cls=cls, default=default)
    if _SURROGATE.search(text):
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"), cls=cls, default=default)
    return text


def utf8_size(text: str) -> int:
    """The bytes ``text`` takes on the wire (what a size limit counts), lone surrogates included."""
    return len(text.encode("utf-8", "surrogatepass"))
