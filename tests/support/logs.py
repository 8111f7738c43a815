"""Capture exactly what the shared Powertools logger writes (JSON lines, extras included), at INFO,
by pointing its own handler at a buffer for the duration."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator

from lambda_agents.observability import logger


@contextlib.contextmanager
def captured_logs(level: str = "INFO") -> Iterator[io.StringIO]:
    buffer = io.StringIO()
    handler = logger.registered_handler
    previous_stream = handler.setStream(buffer)
    previous_level = logger.log_level
    logger.setLevel(level)
    try:
        yield buffer
    finally:
        handler.setStream(previous_stream)
        logger.setLevel(previous_level)
