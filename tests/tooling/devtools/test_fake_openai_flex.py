"""Spec: the fake plays OpenAI's service tiers as documented (devtools/fake_openai/flex.py): it
takes ``service_tier``, says in the answer which tier processed it, refuses a tier OpenAI does not
know, writes flex answers slower, and, told flex is short of capacity, refuses flex calls with the
unbilled ``429 Resource Unavailable`` while other tiers are served."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from devtools.fake_openai import FLEX_SLOWDOWN, FakeOpenAIServer, FlexCapacity, RateLimit, Reply, SpeedProfile

MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(time_scale=0.01) as running:
        yield running


def client(server: FakeOpenAIServer) -> openai.OpenAI:
    return openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0, timeout=10.0)


def ledger(server: FakeOpenAIServer, requests: int) -> list[Any]:
    """The billing records once the server has written them (after the client's last read)."""
    deadline = time.monotonic() + 5
    while len(server.billing) < requests and time.monotonic() < deadline:
        time.sleep(0.005)
    return list(server.billing)


def test_a_flex_call_is_answered_as_flex_whole_or_streamed_and_a_call_without_a_tier_as_default(
    server: FakeOpenAIServer,
) -> None:
    api = client(server)
    whole = api.chat.completions.create(model="o4-mini", messages=MESSAGES, service_tier="flex")
    chunks = list(api.chat.completions.create(model="o4-mini", messages=MESSAGES, service_tier="flex", stream=True))
    plain = api.chat.completions.create(model="o4-mini", messages=MESSAGES)

    assert whole.service_tier == "flex"
    assert chunks and {chunk.service_tier for chunk in chunks} == {"flex"}
    assert plain.service_tier == "default"
    assert [record.service_tier for record in ledger(server, 3)] == ["flex", "flex", "default"]
    assert [request.get("service_tier") for request in server.requests] == ["flex", "flex", None]


def test_a_tier_openai_does_not_know_is_a_400_before_anything_is_billed(server: FakeOpenAIServer) -> None:
    with pytest.raises(openai.BadRequestError, match="Supported values"):
        client(server).chat.completions.create(
            model="o4-mini",
            messages=MESSAGES,
            extra_body={"service_tier": "cheap"},
        )
    assert server.requests == [] and server.billing == []


def test_short_of_flex_capacity_a_flex_call_gets_the_unbilled_429_resource_unavailable_and_default_is_served() -> None:
    limit = RateLimit(requests_per_minute=60, tokens_per_minute=100_000)
    with FakeOpenAIServer(rate_limit=limit) as server:
        server.set_flex_capacity(FlexCapacity(short=True, retry_after_s=30))
        server.enqueue(Reply(content="served at default"))
        api = client(server)
        with pytest.raises(openai.RateLimitError) as refused:
            api.chat.completions.create(model="o4-mini", messages=MESSAGES, service_tier="flex")
        served = api.chat.completions.with_raw_response.create(model="o4-mini", messages=MESSAGES)

    error = refused.value
    assert error.status_code == 429 and error.code == "resource_unavailable"
    assert error.response.headers["retry-after"] == "30"
    assert error.response.headers["x-ratelimit-limit-requests"] == "60"
    # Not counted against the account: the served call after it is the account's first.
    assert served.headers["x-ratelimit-remaining-requests"] == "59"
    assert served.parse().choices[0].message.content == "served at default"
    refusal, answer = ledger(server, 2)
    assert (refusal.ended, refusal.prompt_tokens, refusal.completion_tokens) == ("rate_limited", 0, 0)
    assert (answer.ended, answer.service_tier) == ("complete", "default")


def test_with_capacity_back_a_flex_call_is_served_again(server: FakeOpenAIServer) -> None:
    server.set_flex_capacity(FlexCapacity(short=True))
    with pytest.raises(openai.RateLimitError) as refused:
        client(server).chat.completions.create(model="o4-mini", messages=MESSAGES, service_tier="flex")
    assert "retry-after" not in refused.value.response.headers  # none unless one is set
    server.set_flex_capacity(FlexCapacity())
    answer = client(server).chat.completions.create(model="o4-mini", messages=MESSAGES, service_tier="flex")
    assert answer.service_tier == "flex"


def test_a_flex_answer_is_paced_slower_than_the_profile_by_the_flex_slowdown() -> None:
    steady = SpeedProfile("steady", (0.5, 0.5), (50.0, 50.0, 50.0))
    with FakeOpenAIServer(profile=steady, time_scale=0.1) as server:
        reply = Reply(content="x")
        default_pace = server._pace(reply, {"model": "m"})
        flex_pace = server._pace(reply, {"model": "m", "service_tier": "flex"})
    assert default_pace == pytest.approx((0.05, 0.002))
    assert flex_pace == pytest.approx((0.05 * FLEX_SLOWDOWN, 0.002 * FLEX_SLOWDOWN))
