"""Spec: the fake server answers at a real model's speed, streams exactly as OpenAI does, stalls,
drops, rate-limits and bills like the provider, so that what the product proves against it holds
against the real service. Every test reads the stream through the real openai client, with a
small time_scale so a minute of the model's time is a fraction of a second of the test's."""

from __future__ import annotations

import itertools
import json
import math
import random
import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from lambda_agents.llm.rate_budget import parse_duration
from lambda_agents.llm.types import estimate_tokens

from devtools.fake_openai import (
    GPT_4O,
    REASONING,
    SLOW_HOUR,
    FakeOpenAIServer,
    Fault,
    ManualClock,
    RateLimit,
    Reply,
    go_duration,
    prompt_tokens_of,
)

MESSAGES = [{"role": "user", "content": "hi"}]
ANSWER = "Breathe in for four counts, hold for four, out for four. " * 20
ANSWER_TOKENS = estimate_tokens(ANSWER)  # 285: ceil(utf-8 bytes / 4), as the server counts


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(time_scale=0.01) as running:
        yield running


def client(server: FakeOpenAIServer, timeout: float = 10.0) -> openai.OpenAI:
    return openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0, timeout=timeout)


def billing_of(server: FakeOpenAIServer, requests: int = 1) -> list[Any]:
    """The server's billing records once it has written them (it does after the client's last read)."""
    deadline = time.monotonic() + 5
    while len(server.billing) < requests and time.monotonic() < deadline:
        time.sleep(0.005)
    return list(server.billing)


def streamed(server: FakeOpenAIServer, **arguments: Any) -> list[Any]:
    stream = client(server).chat.completions.create(
        model="gpt-4o", messages=MESSAGES, stream=True, stream_options={"include_usage": True}, **arguments
    )
    return list(stream)


def test_given_a_stream_then_the_content_deltas_reassemble_the_answer_and_finish_and_usage_come_last(
    server: FakeOpenAIServer,
) -> None:
    server.enqueue(Reply(content=ANSWER))
    chunks = streamed(server)
    first, *middle, finish, usage = chunks
    assert first.choices[0].delta.role == "assistant" and first.choices[0].delta.content == ""
    assert "".join(chunk.choices[0].delta.content for chunk in middle) == ANSWER
    assert len(middle) == ANSWER_TOKENS  # one token's text per delta
    assert all(chunk.choices[0].finish_reason is None for chunk in [first, *middle])
    assert finish.choices[0].finish_reason == "stop" and finish.choices[0].delta.content is None
    assert usage.choices == [] and usage.usage.completion_tokens == ANSWER_TOKENS
    assert all(chunk.usage is None for chunk in chunks[:-1])


def test_given_no_include_usage_then_no_usage_chunk(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(content="Short answer."))
    chunks = list(client(server).chat.completions.create(model="m", messages=MESSAGES, stream=True))
    assert chunks[-1].choices[0].finish_reason == "stop" and chunks[-1].usage is None


def test_given_a_tool_call_then_its_name_id_and_argument_deltas_reassemble_it(server: FakeOpenAIServer) -> None:
    arguments = json.dumps({"message": "How many years have you worked as a barista?", "facts": ["a" * 40] * 3})
    server.enqueue(Reply(tool_arguments=arguments, tool_name="ask", finish_reason="tool_calls"))
    chunks = streamed(server)
    calls = [call for chunk in chunks if chunk.choices for call in (chunk.choices[0].delta.tool_calls or [])]
    assert calls[0].id == "call_1" and calls[0].function.name == "ask" and calls[0].type == "function"
    assert all(call.id is None and call.function.name is None for call in calls[1:])
    assert "".join(call.function.arguments for call in calls) == arguments
    assert chunks[-2].choices[0].finish_reason == "tool_calls"
    assert chunks[0].choices[0].delta.content is None


def test_given_a_refusal_then_it_streams_as_refusal_deltas(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(refusal="I can't help with that."))
    chunks = streamed(server)
    deltas = [chunk.choices[0].delta for chunk in chunks[1:-2]]
    assert "".join(delta.refusal for delta in deltas) == "I can't help with that."
    assert all(delta.content is None for delta in deltas)


def test_given_a_budget_below_the_answer_then_the_stream_stops_there_with_length_billed_the_limit(
    server: FakeOpenAIServer,
) -> None:
    server.enqueue(Reply(content=ANSWER, needs_tokens=400))
    chunks = streamed(server, max_completion_tokens=100)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == ANSWER[: len(ANSWER) // 4]
    assert chunks[-2].choices[0].finish_reason == "length"
    assert chunks[-1].usage.completion_tokens == 100
    (record,) = billing_of(server)
    assert record.completion_tokens == 100 and record.ended == "complete"


def test_given_a_rate_then_the_answer_takes_its_tokens_over_that_rate(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(content=ANSWER, first_token_s=5.0, tokens_per_s=50.0))  # 5 s + 285 / 50 = 10.7 s
    started = time.monotonic()
    stream = client(server).chat.completions.create(model="m", messages=MESSAGES, stream=True)
    first_token_at = None
    for chunk in stream:
        if first_token_at is None and chunk.choices and chunk.choices[0].delta.content:
            first_token_at = time.monotonic() - started
    total = time.monotonic() - started
    assert first_token_at is not None and first_token_at >= 0.05  # 5 s of the model's time at 0.01
    assert total >= 0.106 and total > first_token_at


def test_given_a_whole_answer_then_it_arrives_after_the_first_token_and_every_token(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(content=ANSWER, first_token_s=2.0, tokens_per_s=40.0))  # 2 + 7 = 9 s
    started = time.monotonic()
    client(server).chat.completions.create(model="m", messages=MESSAGES)
    assert time.monotonic() - started >= 0.09


def test_given_a_stall_then_the_rest_of_the_stream_waits_for_it(server: FakeOpenAIServer) -> None:
    # 2 tokens/s at 0.01: 5 ms apart, one token a chunk; 20 tokens. The 2 s pause is long against
    # the pauses of a busy machine that reads the tokens on either side of it late.
    server.enqueue(
        Reply(content="Breathe in, hold. " * 4 + "Out.", tokens_per_s=2.0, stall_after_tokens=10, stall_s=200.0)
    )
    stamps = []
    for chunk in client(server).chat.completions.create(model="m", messages=MESSAGES, stream=True):
        if chunk.choices and chunk.choices[0].delta.content:
            stamps.append(time.monotonic())
    gaps = [later - earlier for earlier, later in itertools.pairwise(stamps)]
    # The pause is between tokens 10 and 11 (the SSE decoder may hand token 10 over with 11).
    assert max(gaps[8], gaps[9]) >= 1.0  # 200 s of the model's time, at 0.01: 2 s


def test_given_a_drop_then_the_clients_iteration_fails_with_a_connection_error(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(content=ANSWER, drop_after_tokens=30))
    received = []
    with pytest.raises(openai.APIConnectionError):
        for chunk in client(server).chat.completions.create(model="m", messages=MESSAGES, stream=True):
            received.append(chunk)
    assert len(received) == 31  # the role, then 30 tokens
    (record,) = billing_of(server)
    assert record.ended == "dropped" and record.completion_tokens == 30


def test_given_a_client_that_closes_a_stream_then_generation_stops_and_only_what_was_written_is_billed(
    server: FakeOpenAIServer,
) -> None:
    server.enqueue(Reply(content=ANSWER * 5, tokens_per_s=1.0))  # 10 ms a token here, 14 s in all
    stream = client(server).chat.completions.create(model="m", messages=MESSAGES, stream=True)
    for index, _ in enumerate(stream):
        if index == 20:
            break
    stream.close()
    (record,) = billing_of(server)
    # What it had written by the time the client closed: 20 tokens, and those of however long a busy
    # machine took to close (500: 5 s), not the 1,425 of the whole answer.
    assert record.ended == "client_closed" and 20 <= record.completion_tokens < 500


def test_given_a_client_that_abandons_a_whole_answer_then_it_is_generated_and_billed_in_full(
    server: FakeOpenAIServer,
) -> None:
    # 200 s of the model's time: 2 s here, long after the client's 0.05 s, however late it notices.
    server.enqueue(Reply(content=ANSWER, tokens_per_s=1.425))
    with pytest.raises(openai.APITimeoutError):
        client(server, timeout=0.05).chat.completions.create(model="m", messages=MESSAGES)
    (record,) = billing_of(server)
    assert record.completion_tokens == ANSWER_TOKENS and record.ended in ("client_closed", "complete")


def test_given_a_burst_past_the_tokens_per_minute_then_429_with_openais_headers_and_the_limit_refills() -> None:
    """The limit's minute runs at the time_scale (0.6 s here) on a clock the test moves: the burst
    meets an account no refill has touched, and the wait the 429 names is exactly the refill."""
    limit = RateLimit(requests_per_minute=100, tokens_per_minute=10_000)
    clock = ManualClock()
    with FakeOpenAIServer(time_scale=0.01, rate_limit=limit, rate_clock=clock) as server:
        api = client(server)
        for _ in range(2):  # 2 x (prompt + 4,000) fit in 10,000
            api.chat.completions.create(model="m", messages=MESSAGES, max_completion_tokens=4000)
        with pytest.raises(openai.RateLimitError) as refused:
            api.chat.completions.create(model="m", messages=MESSAGES, max_completion_tokens=4000)
        headers = refused.value.response.headers
        cost = prompt_tokens_of({"messages": MESSAGES}) + 4000
        short = cost - (10_000 - 2 * cost)
        assert headers["x-ratelimit-limit-tokens"] == "10000" and headers["x-ratelimit-limit-requests"] == "100"
        assert int(headers["x-ratelimit-remaining-tokens"]) == 10_000 - 2 * cost
        # The refill of what is short, at 10,000 tokens a (scaled) minute: ~0.12 s here.
        assert int(headers["retry-after-ms"]) == math.ceil(short / 10_000 * 60.0 * 0.01 * 1000)
        assert headers["retry-after"] == "1"  # whole seconds, at least one
        assert headers["x-ratelimit-reset-tokens"].endswith("s")
        assert "tokens per min (TPM)" in refused.value.message
        clock.advance(int(headers["retry-after-ms"]) / 1000)
        ok = api.chat.completions.with_raw_response.create(model="m", messages=MESSAGES, max_completion_tokens=4000)
        assert "x-ratelimit-remaining-tokens" in ok.headers
        assert [record.ended for record in billing_of(server, 4)].count("rate_limited") == 1


def test_profiles_draw_first_tokens_and_rates_in_their_measured_ranges() -> None:
    rng = random.Random(7)
    for profile, (first_low, first_high), (rate_low, rate_high) in (
        (GPT_4O, (0.2, 1.2), (35.0, 80.0)),
        (SLOW_HOUR, (0.5, 2.0), (15.0, 25.0)),
        (REASONING, (10.0, 40.0), (40.0, 80.0)),
    ):
        draws = [profile.draw(rng) for _ in range(200)]
        assert all(first_low <= first <= first_high and rate_low <= rate <= rate_high for first, rate in draws)
    rates = sorted(rate for _, rate in (GPT_4O.draw(rng) for _ in range(400)))
    assert 55 <= rates[200] <= 65  # the middle of gpt-4o's rates is about 60 tokens/s


def test_durations_are_written_as_openai_writes_them() -> None:
    assert [go_duration(s) for s in (0.02, 1.0, 1.5, 360.0, 3725.0)] == ["20ms", "1s", "1.5s", "6m0s", "1h2m5s"]


def test_every_answer_carries_the_accounts_limits_as_openai_sends_them_and_a_scripted_429_is_not_counted() -> None:
    """OpenAI's headers on every answer, streamed or not: the limit, what is left after this request
    was counted, and the time until the bucket is full again (a Go duration), at the limit's pace
    (a minute, on a clock that does not move here: nothing refills between the requests). A 429 the
    account did not decide (scripted) carries them too, and the account does not count the request
    it refused."""
    limit = RateLimit(requests_per_minute=60, tokens_per_minute=1_000)
    with FakeOpenAIServer(rate_limit=limit, rate_clock=ManualClock()) as server:
        server.enqueue(Reply(content="one"), Reply(content="two"), Fault(429, retry_after=1))
        api = client(server)
        first = api.chat.completions.with_raw_response.create(model="m", messages=MESSAGES, max_completion_tokens=100)
        streaming = api.chat.completions.create(model="m", messages=MESSAGES, max_completion_tokens=100, stream=True)
        second = streaming.response.headers
        list(streaming)
        with pytest.raises(openai.RateLimitError) as scripted:
            api.chat.completions.create(model="m", messages=MESSAGES, max_completion_tokens=100)
        refused = scripted.value.response.headers

    cost = prompt_tokens_of({"messages": MESSAGES}) + 100
    for headers, taken in ((first.headers, 1), (second, 2), (refused, 2)):
        assert (headers["x-ratelimit-limit-requests"], headers["x-ratelimit-limit-tokens"]) == ("60", "1000")
        requests, tokens = int(headers["x-ratelimit-remaining-requests"]), int(headers["x-ratelimit-remaining-tokens"])
        assert (requests, tokens) == (60 - taken, 1_000 - taken * cost)
        # The time to refill what was taken at the limit's pace: a request a second, 1,000 tokens a minute.
        assert parse_duration(headers["x-ratelimit-reset-requests"]) == pytest.approx(taken, abs=0.001)
        assert parse_duration(headers["x-ratelimit-reset-tokens"]) == pytest.approx(taken * cost * 0.06, abs=0.001)
    assert refused["retry-after"] == "1"


def test_a_compatible_server_without_limits_sends_no_rate_limit_headers() -> None:
    with FakeOpenAIServer(rate_limit=None) as server:
        answer = client(server).chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
    assert not [name for name in answer.headers if name.startswith("x-ratelimit-")]


def test_a_server_that_enforces_a_limit_without_stating_it_refuses_with_retry_after_only() -> None:
    limit = RateLimit(requests_per_minute=1, tokens_per_minute=1_000_000)
    with FakeOpenAIServer(rate_limit=limit, limit_headers=False) as server:
        api = client(server)
        answer = api.chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
        with pytest.raises(openai.RateLimitError) as refused:
            api.chat.completions.create(model="m", messages=MESSAGES)
    for headers in (answer.headers, refused.value.response.headers):
        assert not [name for name in headers if name.startswith("x-ratelimit-")]
    assert int(refused.value.response.headers["retry-after"]) >= 1


def test_a_server_that_states_its_limit_only_when_it_refuses_sends_the_headers_with_its_429s_alone() -> None:
    limit = RateLimit(requests_per_minute=1, tokens_per_minute=1_000_000)
    with FakeOpenAIServer(rate_limit=limit, limit_headers="refusals") as server:
        api = client(server)
        answer = api.chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
        with pytest.raises(openai.RateLimitError) as refused:
            api.chat.completions.create(model="m", messages=MESSAGES)
    assert not [name for name in answer.headers if name.startswith("x-ratelimit-")]
    headers = refused.value.response.headers
    assert (headers["x-ratelimit-limit-requests"], headers["x-ratelimit-remaining-requests"]) == ("1", "0")
    assert int(headers["retry-after"]) >= 1


def test_a_client_that_leaves_during_a_pause_ends_the_answer_then_billed_what_was_written(
    server: FakeOpenAIServer,
) -> None:
    # 2 tokens/s at 0.01: a token a chunk, 5 ms apart; the pause after 20 lasts until the client
    # leaves (a day of the model's time), so only the client's leaving can end the answer.
    server.enqueue(Reply(content=ANSWER, tokens_per_s=2.0, stall_after_tokens=20, stall_s=86_400.0))
    stream = client(server).chat.completions.create(model="m", messages=MESSAGES, stream=True)
    tokens = 0
    for chunk in stream:
        tokens += bool(chunk.choices and chunk.choices[0].delta.content)
        if tokens == 20:  # the last before the pause: the server is in it (or about to be)
            break
    stream.close()
    (record,) = billing_of(server)  # when the client left, not at the end of the pause
    assert record.ended == "client_closed" and record.completion_tokens == 20


def test_a_client_that_leaves_before_the_first_token_ends_the_answer_then_billed_nothing(
    server: FakeOpenAIServer,
) -> None:
    # The first token would come after a day of the model's time: only the client's leaving ends it.
    server.enqueue(Reply(content=ANSWER, first_token_s=86_400.0))
    stream = client(server).chat.completions.create(model="m", messages=MESSAGES, stream=True)  # the headers came
    stream.close()
    (record,) = billing_of(server)
    assert (record.ended, record.completion_tokens) == ("client_closed", 0)
