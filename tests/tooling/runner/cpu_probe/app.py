"""A function that answers what its machine looks like from inside: the CPU counts Python reports
and the thread pools sized by them (the local runner's Lambda-machine tests)."""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def lambda_handler(event: Any, context: Any) -> dict[str, int]:
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(asyncio.to_thread(int))  # creates the loop's default executor
        default_executor: Any = loop._default_executor
        default_threads = default_executor._max_workers
    finally:
        loop.close()
    with ThreadPoolExecutor() as pool:
        pool_threads = pool._max_workers
    return {
        "cpu_count": os.cpu_count() or 0,
        "process_cpu_count": os.process_cpu_count() or 0,
        "thread_pool": pool_threads,
        "to_thread": default_threads,
    }
