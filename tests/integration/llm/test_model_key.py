"""Spec: the real openai client reads its key at the first call; a key the provider refuses (401,
as OpenAI answers a wrong key) is read again past the cache and the call retried once with a
rotated key; the same key again is not retried; a key that cannot be read fails the call as auth,
with no request sent."""

from __future__ import annotations

import pytest
from lambda_agents.llm.api_key import ApiKeySource
from lambda_agents.llm.errors import ProviderAuthError
from lambda_agents.llm.openai_model import OpenAIChatModel, OpenAIModelSettings
from lambda_agents.llm.types import ChatRequest

from devtools.fake_openai import FakeOpenAIServer, Reply

pytestmark = pytest.mark.integration
REQUEST = ChatRequest(messages=[{"role": "user", "content": "hello"}], max_tokens=50)


class Store:
    def __init__(self, *values: str | Exception) -> None:
        self.values = list(values)
        self.reads: list[bool] = []

    def __call__(self, name: str, force: bool) -> str:
        self.reads.append(force)
        value = self.values.pop(0) if len(self.values) > 1 else self.values[0]
        if isinstance(value, Exception):
            raise value
        return value


def model(server: FakeOpenAIServer, store: Store) -> OpenAIChatModel:
    return OpenAIChatModel(
        OpenAIModelSettings(api_key=ApiKeySource(parameter="/k", fetch=store), model="gpt-4o", base_url=server.base_url)
    )


def test_a_rotated_key_is_picked_up_after_one_refusal_without_a_new_container() -> None:
    with FakeOpenAIServer(api_keys=frozenset({"sk-new"})) as server:
        server.enqueue(Reply(content="hi"))
        store = Store("sk-old", "sk-new")
        answer = model(server, store).complete(REQUEST)
        assert answer.content == "hi"
        assert server.keys_seen == ["sk-old", "sk-new"] and store.reads == [False, True]


def test_a_key_refused_again_is_not_retried_and_fails_as_auth() -> None:
    with FakeOpenAIServer(api_keys=frozenset({"sk-valid"})) as server:
        store = Store("sk-revoked")
        with pytest.raises(ProviderAuthError):
            model(server, store).complete(REQUEST)
        assert server.keys_seen == ["sk-revoked"] and store.reads == [False, True]


def test_a_key_that_cannot_be_read_fails_the_call_and_sends_nothing() -> None:
    with FakeOpenAIServer() as server:
        unreadable = model(server, Store(PermissionError("AccessDeniedException")))  # built: nothing read yet
        with pytest.raises(ProviderAuthError, match="could not be read from parameter /k"):
            unreadable.complete(REQUEST)
        assert server.keys_seen == []
