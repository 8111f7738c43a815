"""Instructor side of the peer benchmark; runs in its own venv (instructor + openai + pydantic).

How it works, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import instructor
from commander_task import CommanderOutput
from messy_answers import measure
from openai import OpenAI
from peer_protocol import Job, Progress, answer_job, answered, failed
from pydantic_core import from_json


def run_user(client: Any, job: Job, user: Job) -> Job:
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
    except Exception as error:  # any failure: the caller falls back
        return failed(user, error, started)
    usage = getattr(completion, "usage", None)
    return answered(user, output.model_dump(mode="json"), getattr(usage, "total_tokens", None), started)


def commander(job: Job) -> Job:
    client = instructor.from_openai(OpenAI(base_url=job["base_url"], api_key="bench"))
    started = time.perf_counter()
    done = Progress(len(job["users"]))

    def one(user: Job) -> Job:
        result = run_user(client, job, user)
        done.tick()
        return result

    with ThreadPoolExecutor(job["concurrency"]) as pool:
        results = list(pool.map(one, job["users"]))
    return {"results": results, "wall_s": time.perf_counter() - started}


def extract(job: Job) -> Job:
    # Instructor's own JSON-from-text helper (its MD_JSON / JSON text path, then model_validate_json).
    from instructor.v2.core.json import extract_json_from_codeblock

    def parse(text: str) -> Any:
        return from_json(extract_json_from_codeblock(text))

    return {"outcomes": measure(parse, job["repeat"])}


if __name__ == "__main__":
    answer_job(commander, extract, ("instructor", "openai", "pydantic"))
