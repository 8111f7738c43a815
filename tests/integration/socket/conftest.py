"""The fake OpenAI server a socket test module's served runner answers from (one per module)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devtools.fake_openai import FakeOpenAIServer


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server
