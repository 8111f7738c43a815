"""Spec: the fake bills cached input as OpenAI's prompt caching guide documents it (the rules cited in
``devtools/fake_openai/caching.py``), so a cost measured against it counts cached input as the
provider would: every answer carries ``usage.prompt_tokens_details.cached_tokens`` (0 on a miss),
streamed with ``stream_options.include_usage`` or not and on the Batch API's output lines; prompts
under 1,024 tokens are never cached; a hit is the longest prefix sent before, 1,024 tokens plus
whole 128-token steps; a prefix is kept ``prompt_cache_retention_s`` after its last use; the cache
is the account's, per model, on the exact prefix (tools and schema first). The billing ledger
records each request's model, prompt, cached and completion tokens, batch or not, and its
``safety_identifier`` / ``user``.

Every call goes through the real openai client; the cache's clock is moved by hand."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from devtools.fake_openai import (
    CACHE_INCREMENT,
    MIN_CACHED_TOKENS,
    FakeOpenAIServer,
    ManualClock,
    Reply,
    cacheable_tokens,
    prompt_tokens_of,
)
from devtools.fake_openai.caching import cache_order_text

RETENTION_S = 300.0
# ~3,000 tokens of instructions every request starts with (as the product's system prompts do).
INSTRUCTIONS = "".join(f"Rule {n}: answer in the user's language, briefly and kindly. " for n in range(200))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def server(clock: ManualClock) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(cache_clock=clock, batch_clock=clock, prompt_cache_retention_s=RETENTION_S) as running:
        yield running


def client(server: FakeOpenAIServer) -> openai.OpenAI:
    return openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0, timeout=10.0)


def messages(*turns: str, system: str = INSTRUCTIONS) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}] + [{"role": "user", "content": turn} for turn in turns]


def ask(server: FakeOpenAIServer, chat: list[dict[str, str]], model: str = "gpt-4o", **extra: Any) -> Any:
    return client(server).chat.completions.create(model=model, messages=chat, **extra)  # type: ignore[arg-type]


def cached(answer: Any) -> int:
    return int(answer.usage.prompt_tokens_details.cached_tokens)


def shared_prefix_tokens(first: dict[str, Any], second: dict[str, Any]) -> int:
    """Whole tokens (4 bytes each, as the fake counts) the two prompts start with alike."""
    a, b = cache_order_text(first).encode(), cache_order_text(second).encode()
    same = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return same // 4


def test_every_answer_carries_the_documented_usage_shape_with_cached_tokens_zero_on_a_miss(
    server: FakeOpenAIServer,
) -> None:
    chat: Any = messages("hi")
    raw = client(server).chat.completions.with_raw_response.create(model="gpt-4o", messages=chat)
    usage = json.loads(raw.http_response.text)["usage"]

    assert set(usage) == {
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "prompt_tokens_details",
        "completion_tokens_details",
    }
    assert usage["prompt_tokens_details"] == {"cached_tokens": 0, "audio_tokens": 0}
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_a_prompt_under_1024_tokens_is_never_cached() -> None:
    with FakeOpenAIServer() as server:
        short = messages("hi", system="Be brief.")
        assert prompt_tokens_of({"messages": short}) < MIN_CACHED_TOKENS
        assert [cached(ask(server, short)) for _ in range(3)] == [0, 0, 0]


def test_a_repeated_long_prompt_is_served_from_the_cache_from_1024_in_128_token_steps(
    server: FakeOpenAIServer,
) -> None:
    chat = messages("中途採用の段取りを作りたいです")
    first, second = ask(server, chat), ask(server, chat)

    prompt_tokens = second.usage.prompt_tokens
    assert prompt_tokens > MIN_CACHED_TOKENS
    assert cached(first) == 0
    assert cached(second) == cacheable_tokens(prompt_tokens)
    assert prompt_tokens - CACHE_INCREMENT < cached(second) <= prompt_tokens
    assert (cached(second) - MIN_CACHED_TOKENS) % CACHE_INCREMENT == 0


def test_a_growing_conversation_is_served_the_longest_prefix_it_shares_with_what_came_before(
    server: FakeOpenAIServer,
) -> None:
    earlier = messages("first question " * 100)
    later = [*earlier, {"role": "assistant", "content": "an answer"}, {"role": "user", "content": "more"}]
    ask(server, earlier)
    answer = ask(server, later)

    shared = shared_prefix_tokens({"messages": earlier}, {"messages": later})
    assert shared < prompt_tokens_of({"messages": earlier})  # the earlier prompt's closing brackets differ
    assert cached(answer) == cacheable_tokens(shared)
    assert cached(answer) > MIN_CACHED_TOKENS


def test_only_the_exact_prefix_hits_another_start_or_another_model_misses(server: FakeOpenAIServer) -> None:
    ask(server, messages("question"))

    other_start = ask(server, messages("question", system="Note. " + INSTRUCTIONS))
    other_model = ask(server, messages("question"), model="gpt-4o-mini")
    same_start_other_question = ask(server, messages("another question entirely"))

    assert (cached(other_start), cached(other_model)) == (0, 0)
    assert cached(same_start_other_question) >= MIN_CACHED_TOKENS  # the shared instructions


def test_tools_and_the_schema_are_the_start_of_the_prefix(server: FakeOpenAIServer) -> None:
    schema = {"type": "object", "properties": {"rule": {"type": "string", "description": INSTRUCTIONS}}}
    response_format = {"type": "json_schema", "json_schema": {"name": "Plan", "schema": schema}}
    ask(server, messages("user one", system="Plan."), response_format=response_format)

    other_user = ask(server, messages("user two", system="Plan."), response_format=response_format)

    assert cached(other_user) >= MIN_CACHED_TOKENS  # the schema alone is over 1,024 tokens


def test_a_prefix_is_kept_the_retention_after_its_last_use_and_each_use_refreshes_it(
    server: FakeOpenAIServer, clock: ManualClock
) -> None:
    chat = messages("question")
    ask(server, chat)
    clock.advance(RETENTION_S - 1)
    assert cached(ask(server, chat)) > 0  # used again: kept another retention from now
    clock.advance(RETENTION_S - 1)
    assert cached(ask(server, chat)) > 0
    clock.advance(RETENTION_S + 1)
    assert cached(ask(server, chat)) == 0  # idle past the retention: computed afresh, and cached again
    assert cached(ask(server, chat)) > 0


def test_a_streamed_answer_reports_cached_tokens_in_its_usage_chunk(server: FakeOpenAIServer) -> None:
    chat = messages("question")
    ask(server, chat)

    stream = ask(server, chat, stream=True, stream_options={"include_usage": True})
    usages = [chunk.usage for chunk in stream if chunk.usage is not None]

    assert len(usages) == 1
    assert usages[0].prompt_tokens_details.cached_tokens == cacheable_tokens(usages[0].prompt_tokens)


def test_a_scripted_prompt_size_holds_cached_tokens_to_what_that_size_can_cache(server: FakeOpenAIServer) -> None:
    chat = messages("question")
    ask(server, chat)
    server.enqueue(Reply(content="ok", prompt_tokens=1100))

    assert cached(ask(server, chat)) == MIN_CACHED_TOKENS


def test_batch_output_lines_carry_cached_tokens_from_the_accounts_cache(
    server: FakeOpenAIServer, clock: ManualClock
) -> None:
    ask(server, messages("warm"))  # a synchronous request of the account warms the shared instructions
    body = {"model": "gpt-4o", "messages": messages("batch question"), "max_completion_tokens": 50}
    lines = [{"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": body} for cid in "ab"]
    api = client(server)
    uploaded = api.files.create(
        file=("in.jsonl", "".join(json.dumps(line) + "\n" for line in lines).encode()), purpose="batch"
    )
    job = api.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")
    clock.advance(60)
    done = api.batches.retrieve(job.id)
    assert done.status == "completed" and done.output_file_id is not None

    answers = [json.loads(text) for text in api.files.content(done.output_file_id).text.splitlines()]
    usage = [answer["response"]["body"]["usage"] for answer in answers]
    prompt_tokens = usage[0]["prompt_tokens"]
    shared = shared_prefix_tokens({"messages": messages("warm")}, body)
    assert sorted(u["prompt_tokens_details"]["cached_tokens"] for u in usage) == [
        cacheable_tokens(shared),  # the first line: the instructions the synchronous request cached
        cacheable_tokens(prompt_tokens),  # the second: the whole prompt, which the first line cached
    ]
    batch = [record for record in server.ledger() if record.batch]
    assert sorted(record.cached_tokens for record in batch) == sorted(
        u["prompt_tokens_details"]["cached_tokens"] for u in usage
    )


def test_the_ledger_says_model_tokens_batch_and_whom_each_request_was_for(server: FakeOpenAIServer) -> None:
    chat = messages("question")
    first = ask(server, chat, safety_identifier="user-hash-1")
    second = ask(server, chat, model="gpt-4o", user="legacy-user")
    third = ask(server, messages("hi", system="short"), model="gpt-4o-mini")

    # A whole answer is billed once it is sent, so the client can read it first: wait (bounded) for the third.
    waited = 0
    while len(server.ledger()) < 3 and waited < 200:
        time.sleep(0.05)
        waited += 1
    ledger = sorted(server.ledger(), key=lambda record: record.request)
    got = [(r.model, r.prompt_tokens, r.cached_tokens, r.completion_tokens, r.batch, r.user, r.ended) for r in ledger]
    assert got == [
        ("gpt-4o", first.usage.prompt_tokens, 0, first.usage.completion_tokens, False, "user-hash-1", "complete"),
        (
            "gpt-4o",
            second.usage.prompt_tokens,
            cached(second),
            second.usage.completion_tokens,
            False,
            "legacy-user",
            "complete",
        ),
        ("gpt-4o-mini", third.usage.prompt_tokens, 0, third.usage.completion_tokens, False, None, "complete"),
    ]
    assert server.billed_cached_tokens() == cached(second) > 0


def test_a_reset_account_starts_with_an_empty_cache(server: FakeOpenAIServer) -> None:
    chat = messages("question")
    ask(server, chat)
    server.reset()

    assert cached(ask(server, chat)) == 0
