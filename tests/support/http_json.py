"""One request to an HTTP API that answers JSON, for the suites that talk to a served API (the
local runner on 127.0.0.1, or a deployed stack). An error status is an answer like any other:
the tests check it, so urllib's HTTPError is read, not raised."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


def exchange(
    url: str,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    *,
    timeout_s: float = 10.0,
) -> tuple[int, dict[str, str], Any]:
    """The answer's status, headers and parsed body (``None`` for an empty one)."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return response.status, dict(response.headers), json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read() or b"null")
