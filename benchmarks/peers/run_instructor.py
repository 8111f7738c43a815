"""Instructor side of the peer benchmark; runs in its own venv (instructor + openai + pydantic).

Reads a JSON job on stdin, prints JSON results on stdout. ``{"task": "commander", ...}`` runs
each user through ``instructor.from_openai(OpenAI(...))`` (default mode TOOLS) with
``max_retries=2``, the openai client's defaults (max_retries=2 on 429/5xx, 600 s timeout) and
``max_tokens`` when the job sets one. ``{"task": "extract", ...}`` times Instructor's own
JSON-from-text helper on the messy-answer corpus.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import instructor
from commander_task import CommanderOutput
from messy_answers import measure
from openai import OpenAI
from pydantic_core import from_json


def run_user(client: Any, job: dict[str, Any], user: dict[str, Any]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if job.get("max_tokens"):
        kwargs["max_tokens"] = job["max_tokens"]
    started = time.perf_counter()
    try:
        output, completion = client.chat.completions.create_with_completion(
            model=job["model"],
            response_model=CommanderOutput,
            messages=user["messages"],
            max_retries=2,
            **kwargs,
        )
    except Exception as error:  # the caller falls back on any failure, like generateNudges.js
        return {
            "user": user["number"],
            "ok": False,
            "error": f"{type(error).__name__}: {str(error)[:160]}",
            "seconds": time.perf_counter() - started,
        }
    usage = getattr(completion, "usage", None)
    return {
        "user": user["number"],
        "ok": True,
        "output": output.model_dump(mode="json"),
        "reported_tokens": getattr(usage, "total_tokens", None),
        "seconds": time.perf_counter() - started,
    }


def commander(job: dict[str, Any]) -> dict[str, Any]:
    client = instructor.from_openai(OpenAI(base_url=job["base_url"], api_key="bench"))
    started = time.perf_counter()
    done = Progress(len(job["users"]))

    def one(user: dict[str, Any]) -> dict[str, Any]:
        result = run_user(client, job, user)
        done.tick()
        return result

    with ThreadPoolExecutor(job["concurrency"]) as pool:
        results = list(pool.map(one, job["users"]))
    return {"results": results, "wall_s": time.perf_counter() - started}


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


def extract(job: dict[str, Any]) -> dict[str, Any]:
    # Instructor's own JSON-from-text helper (its MD_JSON / JSON text path, then model_validate_json).
    from instructor.v2.core.json import extract_json_from_codeblock

    def parse(text: str) -> Any:
        return from_json(extract_json_from_codeblock(text))

    return {"outcomes": measure(parse, job["repeat"])}


def main() -> None:
    job = json.load(sys.stdin)
    result = commander(job) if job["task"] == "commander" else extract(job)
    result["versions"] = {
        "instructor": _version("instructor"),
        "openai": _version("openai"),
        "pydantic": _version("pydantic"),
    }
    json.dump(result, sys.stdout)


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


if __name__ == "__main__":
    main()
