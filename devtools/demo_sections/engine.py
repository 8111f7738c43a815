"""`make demo` section: the structured-output engine at work.

Everything goes through the real openai client (``max_retries=0``) against the fake
OpenAI-compatible server, which plays the faults and, like a provider, cuts an answer that needs
more than the request's max_completion_tokens where the budget runs out and bills the budget:

1. a dynamic output model whose array length is decided at run time (minItems = maxItems = 5);
2. a truncated answer (finish_reason=length) recovered in one retry that asks for what the partial
   answer still needs; the next call of that output type starts there and is not truncated;
3. a wrong array length fed back as a validation error, without the prompt growing;
4. a 429 with Retry-After, then a refusal: the typed error carries every attempt's usage and the
   caller falls back to its rule-based answer;
5. the Lambda deadline: the engine gives up while there is still time to store the fallback;
6. the first provider down (500s): a second model on another endpoint answers the same call, and
   after five failures in a row the first one rests, so the calls go straight to the second.
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
from lambda_agents.llm.openai_model import OpenAIChatModel
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


def _attempts(error_or_result: Any) -> str:
    """``outcome@max_tokens`` per attempt, then the tokens of all attempts, failed ones included."""
    steps = " -> ".join(f"{a.outcome}@{a.max_tokens}" for a in error_or_result.attempts)
    return f"{steps} ({error_or_result.usage.total_tokens} tok)"


def run(ctx: Any) -> None:
    ctx.section("Structured-output engine: the real openai client against a fake server")
    server = ctx.fake_openai
    model = OpenAIChatModel(api_key="demo", model="gpt-4o-2024-08-06", base_url=server.base_url)
    output = ideas_model(IDEAS)
    tokens = GrowingTokenPolicy(initial=256, growth=2.0, ceiling=2048)
    rows = []

    server.enqueue(Reply(content=_ideas(IDEAS)))
    result = generate_structured(
        model, output, PROMPT, StructuredOptions(token_policy=tokens, purpose="demo.forced_length")
    )
    wire = server.requests[-1]["response_format"]["json_schema"]["schema"]["properties"]["ideas"]
    budget_field = next(key for key in ("max_completion_tokens", "max_tokens") if key in server.requests[-1])
    rows.append(["forced array length", _attempts(result), f"{len(result.value.model_dump()['ideas'])} ideas"])

    long_output = ideas_model(LONG_IDEAS)
    server.enqueue(*(Reply(content=_long_ideas(), needs_tokens=LONG_NEEDS) for _ in range(3)))
    result = generate_structured(
        model, long_output, PROMPT, StructuredOptions(token_policy=tokens, purpose="demo.truncated")
    )
    rows.append(["truncated, one retry at its need", _attempts(result), "the partial answer said how much is left"])
    result = generate_structured(
        model, long_output, PROMPT, StructuredOptions(token_policy=tokens, purpose="demo.learned")
    )
    rows.append(["the same output type again", _attempts(result), "starts at what the type needed"])

    server.enqueue(Reply(content=_ideas(IDEAS - 2)), Reply(content=_ideas(IDEAS + 1)), Reply(content=_ideas(IDEAS)))
    before = len(server.requests)
    result = generate_structured(
        model, output, PROMPT, StructuredOptions(token_policy=tokens, purpose="demo.wrong_length")
    )
    sizes = [len(request["messages"]) for request in server.requests[before:]]
    rows.append(["wrong length fed back", _attempts(result), f"messages per attempt {sizes}"])

    server.enqueue(Fault(status=429, retry_after=0.2), Reply(refusal="I can't help with that."))
    try:
        generate_structured(model, output, PROMPT, StructuredOptions(token_policy=tokens, purpose="demo.refusal"))
        raise AssertionError("the refusal was not reported")
    except StructuredOutputError as error:
        outcome = f"{type(error).__name__}: the caller stores its rule-based fallback"
        rows.append(["429 + Retry-After, then refusal", _attempts(error), outcome])

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
        outcome = f"{type(error).__name__} after {spent:.1f}s, {deadline.remaining_s():.1f}s before the deadline"
        rows.append(["slow server, 3.5 s deadline", _attempts(error), outcome])

    ctx.table(["case", "attempts (outcome@max_tokens)", "outcome"], rows)
    ctx.line(f"wire schema for the array: minItems={wire.get('minItems')} maxItems={wire.get('maxItems')}")
    ctx.line(f"the budget goes out as {budget_field} (reasoning models refuse max_tokens); a cut answer bills it all")
    ctx.line("the openai client's own retries are off (max_retries=0): every retry above is the engine's")
    ctx.line("a Lambda's deadline is its remaining time minus a 3 s margin, kept free to store the fallback")
    _second_model(ctx, output, tokens)


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
        ctx.line(
            f"the first provider down (500s), OPENAI_FALLBACK_MODELS set: 8 calls answered by {sorted(set(served))}; "
            f"the first provider asked {len(first.requests) - before} times (its breaker opened after five)"
        )
