"""The audit check the chat unit tests share. The storage fakes (``InMemoryChatStore``,
``CountingLimiter``) are in ``tests.support.memory_chat``, where the contract tests hold them to the
DynamoDB adapters' behaviour; the answer queue is ``tests.support.recording_queue``."""

from __future__ import annotations

from typing import Any


def no_text_in(record: dict[str, Any], *texts: str) -> bool:
    flat = repr(record)
    return not any(text and text in flat for text in texts)
