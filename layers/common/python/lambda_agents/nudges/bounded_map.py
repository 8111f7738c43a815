"""A function mapped over a streamed input on threads, with a bound on what is in flight: the Batch
API path stores a job's answers as they are read, never holding the whole file."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


def map_bounded(
    function: Callable[[Item], Result], items: Iterable[Item], workers: int
) -> Generator[Result, None, None]:
    """``function`` over ``items`` on ``workers`` threads, results in order, like ``pool.map`` but
    taking ``items`` only as results are used: at most two per worker in flight, so a streamed
    input (a job's answers) is never held whole. Closing the iterator stops taking items; those
    in flight finish first."""
    with ThreadPoolExecutor(workers) as pool:
        pending: deque[Future[Result]] = deque()
        for item in items:
            pending.append(pool.submit(function, item))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
