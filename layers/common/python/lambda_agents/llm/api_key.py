"""Where the model's API key comes from, read when a model call needs it and not before.

A key read at cold start made a missing, renamed or undecryptable key parameter a failure of the
whole function: routes that never call the model failed with it, and the generator's batch went
to the dead-letter queue instead of the rule-based nudges. Read at the call, an unreadable key is
a failure of the model like any other (``ProviderAuthError``, kind ``auth``), and each caller
gives its documented degraded answer. The parameter is read through Powertools Parameters with a
``max_age`` cache; after the provider refuses the key (401 / 403) it is read once more, bypassing
the cache, so a rotated key is picked up without a redeploy or a cold start.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .errors import ProviderAuthError

KEY_CACHE_SECONDS = 300

Fetch = Callable[[str, bool], str]  # (parameter name, bypass the cache) -> the key


class ParameterStore:
    """The SSM SecureString through a Powertools provider of its own: its cache belongs to the model
    that holds it (one per container), not to every function sharing the process."""

    def __init__(self) -> None:
        self._provider: Any = None

    def __call__(self, name: str, force: bool) -> str:
        if self._provider is None:
            from aws_lambda_powertools.utilities.parameters import SSMProvider

            self._provider = SSMProvider()
        value = self._provider.get(name, decrypt=True, max_age=KEY_CACHE_SECONDS, force_fetch=force)
        return str(value or "")


class ApiKeySource:
    """The key: the environment's (local runs), else the SSM SecureString parameter's."""

    def __init__(self, *, key: str | None = None, parameter: str | None = None, fetch: Fetch | None = None) -> None:
        self._key = key or None
        self._parameter = parameter or None
        self._fetch = fetch or ParameterStore()
        self._lock = threading.Lock()

    def get(self) -> str:
        """The key (cached by the parameter store); ProviderAuthError when it cannot be read."""
        return self._read(force=False)

    def renewed(self, refused: str) -> str | None:
        """The key read again past the cache, when it differs from ``refused`` (the one the provider
        just refused); None when there is nothing newer to try."""
        if self._parameter is None:
            return None
        try:
            fresh = self._read(force=True)
        except ProviderAuthError:
            return None
        return fresh if fresh != refused else None

    def _read(self, *, force: bool) -> str:
        if self._key is not None:
            return self._key
        if self._parameter is None:
            raise ProviderAuthError("no model key is configured: set OPENAI_API_KEY or OPENAI_API_KEY_PARAMETER")
        with self._lock:
            try:
                value = self._fetch(self._parameter, force)
            except Exception as error:  # not found, access denied, KMS, throttled: the model is unusable
                raise ProviderAuthError(
                    f"the model key could not be read from parameter {self._parameter}: {type(error).__name__}"
                ) from error
        if not value:
            raise ProviderAuthError(f"the model key parameter {self._parameter} is empty")
        return value
