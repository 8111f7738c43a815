"""Spec: with a second model configured (OPENAI_FALLBACK_MODELS), a call the first provider fails
(500s, a first token that never comes, a 429 storm, a refused key) is answered by the second within
the same deadline, through the real openai client; after five failures in a row the first model
rests and the calls go straight to the second; with no second model the outage is today's failure."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from lambda_agents.config import LLMSettings, load_settings
from lambda_agents.llm import (
    ChatRequest,
    Deadline,
    RetryPolicy,
    StructuredOptions,
    complete_with_retries,
    generate_structured,
)
from lambda_agents.llm.accounting import account_for
from lambda_agents.llm.errors import ProviderFailed
from lambda_agents.llm.factory import build_chat_model
from lambda_agents.llm.policy import TRANSIENT_KINDS
from lambda_agents.llm.prices import PRICES
from pydantic import BaseModel

from devtools.fake_openai import BillingRecord, FakeOpenAIServer, Fault, Reply, Slow

pytestmark = pytest.mark.integration


ONE_ATTEMPT = RetryPolicy(max_attempts=1, retry_on=TRANSIENT_KINDS, immediate=frozenset())


class Verdict(BaseModel):
    ok: bool


OUTAGES = {
    "500s": Fault(500),
    "429 storm": Fault(429, retry_after=20),
    "no first token": Slow(60.0),
}
# The first-token limit of both models: the first provider's silence is cut at 2 s, and the second
# answers at once, long before its own 2 s however busy the machine is.
FIRST_TOKEN_LIMIT_S = "2"


def billed_once_written(server: FakeOpenAIServer) -> list[BillingRecord]:
    """The server's billing, once it has written the cut call's record (its thread notices the
    client gone a moment after the client has raised)."""
    written_by = time.monotonic() + 10.0
    while not server.billing and time.monotonic() < written_by:
        time.sleep(0.01)
    return list(server.billing)


@pytest.fixture
def servers() -> Iterator[tuple[FakeOpenAIServer, FakeOpenAIServer]]:
    with FakeOpenAIServer(api_keys=frozenset({"sk-first"})) as first, FakeOpenAIServer() as second:
        yield first, second


def settings(first: FakeOpenAIServer, second: FakeOpenAIServer | None, key: str = "sk-first") -> LLMSettings:
    environment = {
        "AI_AGENT_MODE": "openai",
        "OPENAI_MODEL": "gpt-4o",
        "OPENAI_BASE_URL": first.base_url,
        "OPENAI_API_KEY": key,
        "OPENAI_FIRST_TOKEN_TIMEOUT_SECONDS": FIRST_TOKEN_LIMIT_S,
    }
    if second is not None:
        fallback = [{"model": "gpt-4o-mini", "baseUrl": second.base_url, "apiKey": "sk-second", "output": "tool"}]
        environment["OPENAI_FALLBACK_MODELS"] = json.dumps(fallback)
    return load_settings(LLMSettings, environment)


@pytest.mark.parametrize("outage", list(OUTAGES), ids=list(OUTAGES))
def test_the_second_model_answers_while_the_first_is_down(
    servers: tuple[FakeOpenAIServer, FakeOpenAIServer], outage: str
) -> None:
    first, second = servers
    first.set_outage(OUTAGES[outage])
    model = build_chat_model(settings(first, second))

    result = generate_structured(model, Verdict, [{"role": "user", "content": "?"}], deadline=Deadline.after(20))

    assert result.model == "gpt-4o-mini"
    assert second.requests[0]["tool_choice"]["function"]["name"] == "StructuredOutput"  # its own output mode
    assert second.keys_seen == ["sk-second"]


def test_a_refused_key_sends_the_call_to_the_second_model(servers: tuple[FakeOpenAIServer, FakeOpenAIServer]) -> None:
    first, second = servers
    model = build_chat_model(settings(first, second, key="sk-revoked"))

    result = generate_structured(model, Verdict, [{"role": "user", "content": "?"}])

    assert result.model == "gpt-4o-mini" and first.keys_seen == ["sk-revoked"]


def test_after_five_failures_in_a_row_the_first_model_rests(servers: tuple[FakeOpenAIServer, FakeOpenAIServer]) -> None:
    first, second = servers
    first.set_outage(Fault(500))
    model = build_chat_model(settings(first, second))

    for _ in range(10):
        generate_structured(model, Verdict, [{"role": "user", "content": "?"}])

    assert len(first.requests) == 5 and len(second.requests) == 10


def test_without_a_second_model_the_outage_fails_the_call(servers: tuple[FakeOpenAIServer, FakeOpenAIServer]) -> None:
    first, _ = servers
    first.set_outage(Fault(500))
    model = build_chat_model(settings(first, None))

    with pytest.raises(ProviderFailed) as failed:
        generate_structured(model, Verdict, [{"role": "user", "content": "?"}], StructuredOptions(sleep=lambda _: None))

    assert failed.value.kind == "server_error"


def test_a_stream_cut_on_the_first_model_is_counted_when_the_second_refuses_the_call(
    servers: tuple[FakeOpenAIServer, FakeOpenAIServer],
) -> None:
    """The first provider streams ~500 tokens then stalls (the client cuts it; the provider sent no
    usage and bills what it wrote), the second answers 429: the failure carries the cut call's
    tokens, counted on the safe side of what the provider may bill (OpenAI documents nothing for a
    closed stream: the call's max_tokens), and its record prices them at gpt-4o's rates.
    Before, the chain raised the last link's 429 with none of them."""
    first, second = servers
    # The stall lasts until the client leaves; the 2 s stall limit is long against a busy machine's
    # pauses in the 0.1 s the 500 tokens take.
    first.enqueue(
        Reply(content="途中まで書いた答え。" * 100, tokens_per_s=5_000, stall_after_tokens=500, stall_s=86_400)
    )
    second.set_outage(Fault(429))
    environment = settings(first, second).model_dump(by_alias=True)
    model = build_chat_model(load_settings(LLMSettings, {**environment, "OPENAI_STALL_TIMEOUT_SECONDS": "2"}))
    request = ChatRequest(messages=[{"role": "user", "content": "長い答えを"}], max_tokens=1200, purpose="chat.reply")

    with pytest.raises(ProviderFailed) as failed:
        complete_with_retries(model, request, retry_policy=ONE_ATTEMPT, deadline=Deadline.after(60))

    (billed,) = billed_once_written(first)
    assert billed.completion_tokens >= 500
    usage = failed.value.usage
    assert usage.completion_tokens == 1200 >= billed.completion_tokens  # the most the closed call can bill
    assert usage.prompt_tokens == billed.prompt_tokens
    account = account_for(failed.value.attempts, model="gpt-4o", prompt_version="v")
    price = PRICES["gpt-4o"]
    expected = (billed.prompt_tokens * price.input + 1200 * price.output) / 1_000_000
    assert account.cost_usd == pytest.approx(expected)
