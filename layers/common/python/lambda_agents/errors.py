"""The one base of every failure a caller can act on.

A domain error carries its own HTTP answer: a ``status``, a stable ``code`` for clients, the
``message`` that says what is wrong, and optional ``details`` and ``headers`` (a Retry-After).
One handler of the API resolver (``api.resolver``) answers them all, so a route raises the
domain's error and never catches it to translate it, and an error means the same answer on every
route. Subclasses set ``status`` and ``code``; an instance may give its own ``code``. It sits on
the layer's lowest floor, so every domain package can raise it.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar


class DomainError(Exception):
    status: ClassVar[int] = 400
    code: str = "BAD_REQUEST"
    always_retry_after_s: ClassVar[int | None] = None  # a Retry-After header on every answer of the class

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        details: Any = None,
        headers: dict[str, str] | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        """``retry_after_s``: when the caller may try again, as a Retry-After header (whole
        seconds, at least one); the class's ``always_retry_after_s`` when not given."""
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details
        if retry_after_s is None:
            retry_after_s = self.always_retry_after_s
        if headers is None and retry_after_s is not None:
            headers = {"Retry-After": str(max(1, math.ceil(retry_after_s)))}
        self.headers = headers or {}
