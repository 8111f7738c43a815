"""The fake's prompt cache and what its billing ledger says of each request: OpenAI's prompt caching
as its guide documents it, so cost figures measured against the fake include cached input.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from typing import Any

MIN_CACHED_TOKENS = 1024  # [min]
CACHE_INCREMENT = 128  # [increments]
DEFAULT_RETENTION_S = 300.0  # [retention], the low end of "5 to 10 minutes"
BYTES_PER_TOKEN = 4  # lambda_agents.llm.types.estimate_tokens
# Every this many lookups, prefixes past their retention are forgotten (the cache's memory stays
# bounded by what was used within the retention).
_PRUNE_EVERY = 256


def cacheable_tokens(prompt_tokens: int) -> int:
    """The longest prefix of a prompt of ``prompt_tokens`` the cache can hold: 0 below 1,024, else
    1,024 plus whole 128-token increments [min] [increments]."""
    if prompt_tokens < MIN_CACHED_TOKENS:
        return 0
    return MIN_CACHED_TOKENS + (prompt_tokens - MIN_CACHED_TOKENS) // CACHE_INCREMENT * CACHE_INCREMENT


def cache_order_text(body: dict[str, Any]) -> str:
    """The prompt in the order the cache matches it [prefix]: tools, the output schema, then the
    messages. The same parts as ``answers.prompt_tokens_of`` in another order, so of the same
    length and the same token count."""
    parts = [body.get("tools") or [], body.get("response_format") or {}, body.get("messages", [])]
    return json.dumps(parts, ensure_ascii=False)


def billed_user(body: dict[str, Any]) -> str | None:
    """Whom the request says it is for: ``safety_identifier`` (OpenAI's current field) or the older
    ``user``; None when it sends neither."""
    for field in ("safety_identifier", "user"):
        value = body.get(field)
        if isinstance(value, str) and value:
            return value
    return None


class PromptCache:
    """The account's prompt cache: which prefixes were computed, per model, and when last used.

    ``clock`` reads seconds (a test or a benchmark may move one by hand); ``time_scale`` is the
    server's, so a retention in the provider's seconds lasts ``retention_s * time_scale`` on it."""

    def __init__(
        self,
        retention_s: float = DEFAULT_RETENTION_S,
        *,
        clock: Callable[[], float] = time.monotonic,
        time_scale: Callable[[], float] = lambda: 1.0,
    ) -> None:
        if retention_s <= 0:
            raise ValueError("retention_s must be positive")
        self.retention_s = retention_s
        self._clock = clock
        self._scale = time_scale
        self._lock = threading.Lock()
        self._last_used: dict[bytes, float] = {}
        self._lookups = 0

    def serve(self, body: dict[str, Any], prompt_tokens: int) -> int:
        """The cached tokens of a request the provider now computes: the longest of its prefixes
        (1,024 + 128k tokens, at most ``prompt_tokens``) used within the retention; then every such
        prefix of it is cached, as of now."""
        limit = cacheable_tokens(prompt_tokens)
        if limit == 0:
            return 0
        text = cache_order_text(body).encode("utf-8")
        running = hashlib.sha256(str(body.get("model", "")).encode("utf-8") + b"\0")
        keys: list[tuple[int, bytes]] = []
        position = 0
        for length in range(MIN_CACHED_TOKENS, limit + 1, CACHE_INCREMENT):
            end = length * BYTES_PER_TOKEN
            running.update(text[position:end])
            position = end
            keys.append((length, running.copy().digest()))
        with self._lock:
            now = self._clock()
            keep_s = self.retention_s * self._scale()
            cached = 0
            for length, key in keys:
                last = self._last_used.get(key)
                if last is not None and now - last <= keep_s:
                    cached = length
                self._last_used[key] = now
            self._lookups += 1
            if self._lookups % _PRUNE_EVERY == 0:
                self._last_used = {key: at for key, at in self._last_used.items() if now - at <= keep_s}
        return cached

    def clear(self) -> None:
        with self._lock:
            self._last_used.clear()
