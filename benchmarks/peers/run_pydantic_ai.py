"""Pydantic AI side of the peer benchmark; runs in its own venv (pydantic-ai-slim[openai]).

Reads a JSON job on stdin, prints JSON results on stdout. ``{"task": "commander", ...}`` runs
each user through ``Agent(OpenAIChatModel(..., provider=OpenAIProvider(base_url=...)),
output_type=CommanderOutput, retries={"output": 2})``: the default tool output, the provider's
default openai client (max_retries=2 on 429/5xx, its default timeout) and ``max_tokens`` in the
model settings when the job sets one. ``{"task": "extract", ...}`` times Pydantic AI's own
JSON-from-text path on the messy-answer corpus.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from commander_task import CommanderOutput
from messy_answers import measure
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.settings import ModelSettings
from pydantic_core import from_json


async def run_user(agent: Any, job: dict[str, Any], user: dict[str, Any], gate: asyncio.Semaphore) -> dict[str, Any]:
    system = "\n".join(m["content"] for m in user["messages"] if m["role"] == "system")
    prompt = "\n".join(m["content"] for m in user["messages"] if m["role"] == "user")
    settings = ModelSettings(max_tokens=job["max_tokens"]) if job.get("max_tokens") else None
    async with gate:
        started = time.perf_counter()
        try:
            result = await agent.run(prompt, instructions=system, model_settings=settings)
        except Exception as error:  # the caller falls back on any failure, like generateNudges.js
            PROGRESS.tick()
            return {
                "user": user["number"],
                "ok": False,
                "error": f"{type(error).__name__}: {str(error)[:160]}",
                "seconds": time.perf_counter() - started,
            }
    PROGRESS.tick()
    usage = result.usage()
    return {
        "user": user["number"],
        "ok": True,
        "output": result.output.model_dump(mode="json"),
        "reported_tokens": (usage.input_tokens or 0) + (usage.output_tokens or 0),
        "seconds": time.perf_counter() - started,
    }


class Progress:
    """``progress <done>/<total> users`` on stderr every 50 users: the benchmark echoes it."""

    def __init__(self) -> None:
        self.total, self.done = 0, 0

    def tick(self) -> None:
        self.done += 1  # one event loop: no lock needed
        if self.done % 50 == 0 or self.done == self.total:
            print(f"progress {self.done}/{self.total} users", file=sys.stderr, flush=True)


PROGRESS = Progress()


async def commander(job: dict[str, Any]) -> dict[str, Any]:
    PROGRESS.total = len(job["users"])
    model = OpenAIChatModel(job["model"], provider=OpenAIProvider(base_url=job["base_url"], api_key="bench"))
    agent = Agent(model, output_type=CommanderOutput, retries={"output": 2})
    gate = asyncio.Semaphore(job["concurrency"])
    started = time.perf_counter()
    results = await asyncio.gather(*(run_user(agent, job, user, gate) for user in job["users"]))
    return {"results": list(results), "wall_s": time.perf_counter() - started}


def extract(job: dict[str, Any]) -> dict[str, Any]:
    # Pydantic AI's text output path: ObjectOutputProcessor.validate strips Markdown fences with
    # _utils.strip_markdown_fences, then the validator's validate_json parses the rest.
    from pydantic_ai._utils import strip_markdown_fences

    def parse(text: str) -> Any:
        return from_json(strip_markdown_fences(text))

    return {"outcomes": measure(parse, job["repeat"])}


def main() -> None:
    from importlib.metadata import version

    job = json.load(sys.stdin)
    result = asyncio.run(commander(job)) if job["task"] == "commander" else extract(job)
    result["versions"] = {name: version(name) for name in ("pydantic-ai-slim", "openai", "pydantic")}
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
