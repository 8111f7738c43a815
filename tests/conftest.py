"""Shared fixtures. Unit tests never reach the network; integration tests reach 127.0.0.1 only."""

from __future__ import annotations

import os

# Set before any product module is imported: offline, tracing off (the template's default), fake AWS credentials.
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "LambdaAgentsTest")
os.environ.setdefault("AI_AGENT_MODE", "mock")

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

# The gate is reproducible: property tests draw the same examples on every run (a failure prints
# the example to replay). HYPOTHESIS_PROFILE=explore draws new ones, for hunting locally. No
# deadline: hypothesis's default (200 ms an example) is a timing threshold, which a machine shared
# with other test runs crosses at random ("Unreliable test timings").
settings.register_profile("gate", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "gate"))

# Every EMF line a handler prints is recorded, and held to tests/support/emitted_metrics.json; every
# run prints its counts and times, and records them with --suite-figures=record (the docs' figures).
pytest_plugins = ["tests.support.emf_capture", "tests.support.suite_figures"]

if TYPE_CHECKING:
    from lambda_agents.llm.openai_model import OpenAIChatModel

    from devtools.fake_openai import FakeOpenAIServer


@pytest.fixture(autouse=True)
def fresh_token_budgets() -> Iterator[None]:
    """Every test starts in a fresh container: no output type's need, no model's pace and no
    interview turn's time is learned yet."""
    from lambda_agents.interview.pending_turns import CONTAINER_TURN_TIMES
    from lambda_agents.llm.budgets import CONTAINER_BUDGETS
    from lambda_agents.llm.speeds import CONTAINER_SPEEDS

    learned = (CONTAINER_BUDGETS, CONTAINER_SPEEDS, CONTAINER_TURN_TIMES)
    for memory in learned:
        memory.clear()
    yield
    for memory in learned:
        memory.clear()


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """A started fake OpenAI server; scripted steps left unconsumed fail the test."""
    from devtools.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer() as server:
        yield server
        server.assert_script_consumed()


@pytest.fixture
def openai_chat_model(fake_openai: FakeOpenAIServer) -> OpenAIChatModel:
    """The real openai client (max_retries=0, streaming) pointed at the fake server, which answers
    at once: 60 s for the first token and between chunks (no test of this fixture is about them, and
    a loaded machine can hold a chunk for seconds), and a prior pace that matches it."""
    from lambda_agents.llm.openai_model import OpenAIChatModel, OpenAIModelSettings
    from lambda_agents.llm.policy import StreamTimeouts

    from tests.support.model_speeds import INSTANT_SERVER

    return OpenAIChatModel(
        OpenAIModelSettings(
            api_key="test-key",
            model="gpt-4o-2024-08-06",
            base_url=fake_openai.base_url,
            timeouts=StreamTimeouts(connect_s=60.0, first_token_s=60.0, stall_s=60.0),
            speed_prior=INSTANT_SERVER,
        )
    )
