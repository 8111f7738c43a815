"""`make demo` section: the structured-output engine at work.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import json
import time
from typing import Any

from lambda_agents.llm import (
    Deadline,
    GrowingTokenPolicy,
    RetryPolicy,
    StructuredOptions,
    StructuredOutputError,
    generate_structured,
)
from lambda_agents.llm.openai_model import OpenAIChatModel, OpenAIModelSettings
from pydantic import BaseModel, Field, create_model

from devtools.fake_openai import Fault, Reply, Slow

IDEAS = 5
PROMPT = [
    {"role": "system", "content": "You plan short evening routines."},
    {"role": "user", "content": f"Give me exactly {IDEAS} ideas for winding down."},
]


class Idea(BaseModel):
    title: str = Field(max_length=60)
    minutes: int = Field(ge=1, le=60)


def ideas_model(count: int) -> type[BaseModel]:
    """A model built at run time: the array length is part of the schema the server enforces."""
    return create_model(
        f"Ideas{count}",
        ideas=(list[Idea], Field(min_length=count, max_length=count)),
    )


def _ideas(count: int) -> str:
    return json.dumps({"ideas": [{"title": f"Idea {i + 1}", "minutes": 5 + i} for i in range(count)]})


LONG_IDEAS = 12
LONG_NEEDS = 800  # tokens the whole 12-idea answer takes: more than the policy's first 256


def _long_ideas() -> str:
    titles = ("Dim the lights and stretch slowly", "Write tomorrow's three tasks down", "Read a paper book")
    return json.dumps({"ideas": [{"title": f"{titles[i % 3]} ({i + 1})", "minutes": 5 + i} for i in range(LONG_IDEAS)]})


# What each attempt's outcome means, in words (the engine's error kinds, lambda_agents/llm/errors.py).
OUTCOME_WORDS = {
    "ok": "ok",
    "length": "truncated",
    "validation": "invalid",
    "rate_limit": "rate-limited (429)",
    "refusal": "refused",
    "deadline": "stopped by the deadline",
    "timeout": "timed out",
    "server_error": "a server error",
    "content_filter": "filtered",
}


def _attempts(error_or_result: Any) -> str:
    """Each attempt in words with the token limit it was given: "truncated at 256 tokens,
    retried with 1,047: ok"."""
    said = []
    for index, attempt in enumerate(error_or_result.attempts):
        words = OUTCOME_WORDS.get(attempt.outcome, attempt.outcome.replace("_", " "))
        if index > 0:
            said.append(f"retried with {attempt.max_tokens:,}: {words}")
        elif attempt.outcome == "ok":
            said.append(f"ok within {attempt.max_tokens:,} tokens")
        else:
            said.append(f"{words} at {attempt.max_tokens:,} tokens")
    return ", ".join(said)


def _billed(error_or_result: Any) -> str:
    """The tokens of every attempt, failed ones included: what the provider bills."""
    return f"{error_or_result.usage.total_tokens:,}"


def run(ctx: Any) -> None:
    ctx.section(
        "Structured-output engine: the real openai client against a fake server",
        "How one model call becomes a valid object: cut-off answers, wrong answers, rate limits, refusals, deadlines.",
    )
    server = ctx.fake_openai
    model = OpenAIChatModel(OpenAIModelSettings(api_key="demo", model="gpt-4o-2024-08-06", base_url=server.base_url))
    output = ideas_model(IDEAS)
    tokens = GrowingTokenPolicy(initial=256, growth=2.0, ceiling=2048)
    rows = []

    server.enqueue(Reply(content=_ideas(IDEAS)))
    result = generate_structured(
        model, output, PROMPT, StructuredOptions(token_policy=tokens, purpose="demo.forced_length")
    )
    wire = server.requests[-1]["response_format"]["json_schema"]["schema"]["properties"]["ideas"]
    budget_field = next(key for key in ("max_completion_tokens", "max_tokens") if key in server.requests[-1])
    count = len(result.value.model_dump()["ideas"])
    rows.append([f"exactly {IDEAS} ideas (length in the schema)", _attempts(result), _billed(result), f"{count} ideas"])

    long_output = ideas_model(LONG_IDEAS)
    server.enqueue(*(Reply(content=_long_ideas(), needs_tokens=LONG_NEEDS) for _ in range(3)))
    result = generate_structured(
        model, long_output, PROMPT, StructuredOptions(token_policy=tokens, purpose="demo.truncated")
    )
    rows.append(
        [
            f"{LONG_IDEAS} ideas, ~{LONG_NEEDS} tokens long",
            _attempts(result),
            _billed(result),
            "the cut answer showed the need",
        ]
    )
    result = generate_structured(
        model, long_output, PROMPT, StructuredOptions(token_policy=tokens, purpose="demo.learned")
    )
    rows.append([f"the same {LONG_IDEAS} ideas again", _attempts(result), _billed(result), "starts at that need"])

    server.enqueue(Reply(content=_ideas(IDEAS - 2)), Reply(content=_ideas(IDEAS + 1)), Reply(content=_ideas(IDEAS)))
    before = len(server.requests)
    result = generate_structured(
        model, output, PROMPT, StructuredOptions(token_policy=tokens, purpose="demo.wrong_length")
    )
    sizes = [len(request["messages"]) for request in server.requests[before:]]
    sent = ", ".join(str(size) for size in sizes)
    rows.append(
        [
            f"{IDEAS} ideas; the model gives 3, then 6",
            _attempts(result),
            _billed(result),
            f"errors fed back; messages sent {sent}",
        ]
    )

    rows += _failures(server, model, output, tokens)
    ctx.table(["case", "what happened, attempt by attempt", "tokens billed", "what it shows"], rows)
    ctx.line(
        f"the length is part of the schema the server enforces: minItems={wire.get('minItems')}, "
        f"maxItems={wire.get('maxItems')}"
    )
    ctx.line(
        f"the token limit goes out as {budget_field} (reasoning models refuse max_tokens); a cut answer bills it all"
    )
    ctx.line("the openai client's own retries are off (max_retries=0): every retry above is the engine's")
    ctx.line("a Lambda's deadline is its remaining time minus a 3 s margin, kept free to store the fallback")
    _second_model(ctx, output, tokens)


def _failures(server: Any, model: Any, output: type[BaseModel], tokens: GrowingTokenPolicy) -> list[list[str]]:
    """The rows of a provider that refuses, and of one too slow for the deadline: the caller's fallback."""
    rows = []
    server.enqueue(Fault(status=429, retry_after=0.2), Reply(refusal="I can't help with that."))
    try:
        generate_structured(model, output, PROMPT, StructuredOptions(token_policy=tokens, purpose="demo.refusal"))
        raise AssertionError("the refusal was not reported")
    except StructuredOutputError as error:
        outcome = f"Retry-After waited out; {type(error).__name__}: caller's fallback"
        rows.append(["a 429, then a refusal", _attempts(error), _billed(error), outcome])

    server.enqueue(Slow(5.0, Reply(content=_ideas(IDEAS))))
    started = time.monotonic()
    deadline = Deadline.after(3.5)  # a Lambda with 3.5 s left after its margin
    try:
        generate_structured(
            model,
            output,
            PROMPT,
            StructuredOptions(token_policy=tokens, retry_policy=RetryPolicy(max_attempts=3), purpose="demo.deadline"),
            deadline=deadline,
        )
        raise AssertionError("the deadline was not enforced")
    except StructuredOutputError as error:
        spent = time.monotonic() - started
        outcome = f"{type(error).__name__} after {spent:.1f} s, {deadline.remaining_s():.1f} s to spare"
        rows.append(["a slow server, 3.5 s left", _attempts(error), _billed(error), outcome])
    return rows


def _second_model(ctx: Any, output: type[BaseModel], tokens: GrowingTokenPolicy) -> None:
    """The first provider down, a second model configured as a function configures it."""
    from lambda_agents.config import LLMSettings, load_settings
    from lambda_agents.llm.factory import build_chat_model

    from devtools.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer() as second:
        first = ctx.fake_openai
        first.set_outage(Fault(500))
        second.enqueue(*(Reply(content=_ideas(IDEAS)) for _ in range(8)))
        settings = {
            "AI_AGENT_MODE": "openai",
            "OPENAI_BASE_URL": first.base_url,
            "OPENAI_API_KEY": "demo",
            "OPENAI_FALLBACK_MODELS": json.dumps([{"model": "gpt-4o-mini", "baseUrl": second.base_url}]),
        }
        model = build_chat_model(load_settings(LLMSettings, settings))
        before = len(first.requests)
        try:
            served = [
                generate_structured(
                    model, output, PROMPT, StructuredOptions(token_policy=tokens, purpose="demo.second_model")
                ).model
                for _ in range(8)
            ]
        finally:
            first.set_outage(None)
        answered_by = ", ".join(sorted(set(served)))
        asked = len(first.requests) - before
        ctx.line(
            f"the first provider down (HTTP 500), a second model set (OPENAI_FALLBACK_MODELS): 8 calls answered "
            f"by {answered_by}; the first asked {asked} times (after 5 failures in a row it rests)"
        )
