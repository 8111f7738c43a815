"""One composition root per function.

Each function's ``app.py`` has one ``bootstrap(**overrides)`` that builds everything its handler
uses (settings, services, adapters) and returns it as one ``Dependencies`` value, and one
``dependencies = CompositionRoot(bootstrap)`` that builds it once per container, on the first
invocation: a cold start validates the environment once and a warm one reuses its clients.

Per-request data (the Lambda context, the API event) never lands on what is built here: it travels
as arguments, or through the API resolver's own context (``app.lambda_context``).

Tests and the demo hand their fakes to ``dependencies.rebuild(model=fake)``, or call ``reset()``
after changing the environment, instead of patching module attributes or clearing caches.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class CompositionRoot(Generic[T]):
    """What one function builds once per container, through its ``bootstrap``."""

    def __init__(self, bootstrap: Callable[..., T]) -> None:
        self._bootstrap = bootstrap
        self._built: T | None = None
        self._lock = threading.Lock()

    def __call__(self) -> T:
        built = self._built
        if built is None:
            with self._lock:  # threads of one batch must not build the clients twice
                if self._built is None:
                    self._built = self._bootstrap()
                built = self._built
        return built

    def rebuild(self, **overrides: Any) -> T:
        """Built anew now, with ``overrides`` in place of what the environment would give."""
        with self._lock:
            self._built = self._bootstrap(**overrides)
            return self._built

    def reset(self) -> None:
        """Forget what was built: the next use builds from the environment as it is then."""
        with self._lock:
            self._built = None
