"""Logs carry no secret and no raw user text at INFO: canaries planted in the key, the prompt and
the model's answer must not appear in anything the engine logs, success or failure."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from lambda_agents.llm import RetryPolicy, StructuredOptions, generate_structured
from lambda_agents.llm.errors import StructuredOutputError
from lambda_agents.llm.openai_model import OpenAIChatModel, OpenAIModelSettings
from pydantic import BaseModel

from devtools.fake_openai import FakeOpenAIServer, Fault, Reply
from tests.support.logs import captured_logs

KEY_CANARY = "sk-canary-KEY-7f3a9"
PROMPT_CANARY = "CANARY-USER-TEXT-51d0"
ANSWER_CANARY = "CANARY-MODEL-TEXT-88c2"


class Answer(BaseModel):
    text: str


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """The logger's own JSON output, extras included."""
    with captured_logs() as buffer:
        yield buffer


def test_given_canaries_in_key_prompt_and_answer_when_calls_succeed_and_fail_then_logs_hold_none(
    fake_openai: FakeOpenAIServer, captured: io.StringIO
) -> None:
    model = OpenAIChatModel(OpenAIModelSettings(api_key=KEY_CANARY, model="gpt-4o", base_url=fake_openai.base_url))
    messages = [{"role": "user", "content": f"please remember {PROMPT_CANARY}"}]
    fake_openai.enqueue(
        Reply(content=f'{{"wrong": "{ANSWER_CANARY}"}}'),
        Reply(content=f'{{"text": "{ANSWER_CANARY}"}}'),
        Fault(status=400, message=f"rejected {ANSWER_CANARY}"),
    )
    result = generate_structured(model, Answer, messages, StructuredOptions(retry_policy=RetryPolicy(max_attempts=2)))
    assert result.value.text == ANSWER_CANARY
    with pytest.raises(StructuredOutputError):
        generate_structured(model, Answer, messages, StructuredOptions(retry_policy=RetryPolicy(max_attempts=2)))

    logs = captured.getvalue()
    assert "llm attempt" in logs  # the engine did log every attempt
    for canary in (KEY_CANARY, PROMPT_CANARY, ANSWER_CANARY):
        assert canary not in logs
