"""The peer scripts' side of their exchange with ``peers_bench`` (``run_instructor.py``,
``run_pydantic_ai.py``): the job comes as JSON on stdin, each user's outcome goes back in the
shape the benchmark reads, progress goes to stderr, and the result is printed on stdout with the
libraries' versions. Stand-alone (stdlib only): the scripts import it in their own venvs, as they
import ``commander_task`` and ``messy_answers``.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

Job = dict[str, Any]


def answered(user: Job, output: Any, reported_tokens: int | None, started: float) -> Job:
    """A user the library served, with the tokens it reported (``started``: ``time.perf_counter()``)."""
    return {
        "user": user["number"],
        "ok": True,
        "output": output,
        "reported_tokens": reported_tokens,
        "seconds": time.perf_counter() - started,
    }


def failed(user: Job, error: Exception, started: float) -> Job:
    """A user the library gave up on: the caller falls back on any failure, like generateNudges.js."""
    return {
        "user": user["number"],
        "ok": False,
        "error": f"{type(error).__name__}: {str(error)[:160]}",
        "seconds": time.perf_counter() - started,
    }


class Progress:
    """``progress <done>/<total> users`` on stderr every 50 users: the benchmark echoes it."""

    def __init__(self, total: int) -> None:
        self.total, self.done = total, 0
        self._lock = threading.Lock()

    def tick(self) -> None:
        with self._lock:
            self.done += 1
            if self.done % 50 == 0 or self.done == self.total:
                print(f"progress {self.done}/{self.total} users", file=sys.stderr, flush=True)


def answer_job(commander: Callable[[Job], Job], extract: Callable[[Job], Job], packages: tuple[str, ...]) -> None:
    """Runs the job on stdin (the Commander task or the extraction one) and prints its result,
    with the installed versions of ``packages``."""
    job = json.load(sys.stdin)
    result = commander(job) if job["task"] == "commander" else extract(job)
    result["versions"] = {name: version(name) for name in packages}
    json.dump(result, sys.stdout)
