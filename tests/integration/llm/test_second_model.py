"""Spec: with a second model configured (OPENAI_FALLBACK_MODELS), a call the first provider fails
(500s, a first token that never comes, a 429 storm, a refused key) is answered by the second within
the same deadline, through the real openai client; after five failures in a row the first model
rests and the calls go straight to the second; with no second model the outage is today's failure."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from lambda_agents.config import LLMSettings, load_settings
from lambda_agents.llm import Deadline, StructuredOptions, generate_structured
from lambda_agents.llm.errors import ProviderFailed
from lambda_agents.llm.factory import build_chat_model
from pydantic import BaseModel

from devtools.fake_openai import FakeOpenAIServer, Fault, Slow

pytestmark = pytest.mark.integration


class Verdict(BaseModel):
    ok: bool


OUTAGES = {
    "500s": Fault(500),
    "429 storm": Fault(429, retry_after=20),
    "no first token": Slow(10.0),
}


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
        "OPENAI_FIRST_TOKEN_TIMEOUT_SECONDS": "0.5",
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
