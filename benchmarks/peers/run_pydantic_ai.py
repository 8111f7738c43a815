"""Pydantic AI side of the peer benchmark; runs in its own venv (pydantic-ai-slim[openai]).

How it works, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from commander_task import CommanderOutput
from messy_answers import measure
from peer_protocol import Job, Progress, answer_job, answered, failed
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.settings import ModelSettings
from pydantic_core import from_json


async def run_user(agent: Any, job: Job, user: Job, gate: asyncio.Semaphore, progress: Progress) -> Job:
    system = "\n".join(m["content"] for m in user["messages"] if m["role"] == "system")
    prompt = "\n".join(m["content"] for m in user["messages"] if m["role"] == "user")
    settings = ModelSettings(max_tokens=job["max_tokens"]) if job.get("max_tokens") else None
    async with gate:
        started = time.perf_counter()
        try:
            result = await agent.run(prompt, instructions=system, model_settings=settings)
        except Exception as error:  # any failure: the caller falls back
            progress.tick()
            return failed(user, error, started)
    progress.tick()
    usage = result.usage()
    reported = (usage.input_tokens or 0) + (usage.output_tokens or 0)
    return answered(user, result.output.model_dump(mode="json"), reported, started)


async def commander(job: Job) -> Job:
    progress = Progress(len(job["users"]))
    model = OpenAIChatModel(job["model"], provider=OpenAIProvider(base_url=job["base_url"], api_key="bench"))
    agent = Agent(model, output_type=CommanderOutput, retries={"output": 2})
    gate = asyncio.Semaphore(job["concurrency"])
    started = time.perf_counter()
    results = await asyncio.gather(*(run_user(agent, job, user, gate, progress) for user in job["users"]))
    return {"results": list(results), "wall_s": time.perf_counter() - started}


def extract(job: Job) -> Job:
    # Pydantic AI's text output path: ObjectOutputProcessor.validate strips Markdown fences with
    # _utils.strip_markdown_fences, then the validator's validate_json parses the rest.
    from pydantic_ai._utils import strip_markdown_fences

    def parse(text: str) -> Any:
        return from_json(strip_markdown_fences(text))

    return {"outcomes": measure(parse, job["repeat"])}


if __name__ == "__main__":
    answer_job(lambda job: asyncio.run(commander(job)), extract, ("pydantic-ai-slim", "openai", "pydantic"))
