"""Spec: the fake OpenAI server bills and truncates like a provider, so figures measured against it
are honest: an answer that needs more than the request's budget stops where the budget runs out
(the first limit/needed of its text, finish_reason=length) and is billed the whole limit; it takes
max_completion_tokens or max_tokens, and can play a server that knows only one of them."""

from __future__ import annotations

import json
from typing import Any

from devtools.fake_openai import Reply, completion, default_reply, unsupported_token_field

ANSWER = json.dumps({"steps": [f"step {i}: breathe" for i in range(10)]})


def body(**limit: int) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": "hi"}], **limit}


def choice(payload: dict[str, Any]) -> tuple[str | None, str, int]:
    first = payload["choices"][0]
    return first["message"]["content"], first["finish_reason"], payload["usage"]["completion_tokens"]


def test_given_an_answer_that_needs_more_than_the_budget_then_it_is_cut_at_that_share_and_billed_the_budget() -> None:
    content, finish, billed = choice(completion(body(max_completion_tokens=100), Reply(ANSWER, needs_tokens=400)))
    assert (content, finish, billed) == (ANSWER[: len(ANSWER) // 4], "length", 100)


def test_either_token_field_sets_the_budget() -> None:
    by_old_name = completion(body(max_tokens=100), Reply(ANSWER, needs_tokens=400))
    assert choice(by_old_name)[1:] == ("length", 100)


def test_given_an_answer_within_the_budget_then_it_is_whole_and_billed_what_it_needs() -> None:
    assert choice(completion(body(max_completion_tokens=500), Reply(ANSWER, needs_tokens=400))) == (ANSWER, "stop", 400)


def test_given_a_scripted_length_reply_then_it_is_billed_the_requests_budget_not_its_few_characters() -> None:
    assert choice(completion(body(max_tokens=700), Reply('{"st', finish_reason="length")))[2] == 700


def test_a_tool_call_is_cut_the_same_way() -> None:
    reply = Reply(tool_arguments=ANSWER, finish_reason="tool_calls", needs_tokens=200)
    payload = completion(body(max_completion_tokens=100), reply)
    call = payload["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["arguments"] == ANSWER[: len(ANSWER) // 2]
    assert payload["choices"][0]["finish_reason"] == "length"


def test_the_default_sample_answer_is_truncated_too_when_the_budget_is_too_small() -> None:
    request = {
        **body(max_completion_tokens=5),
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "x",
                "schema": {
                    "type": "object",
                    "properties": {"ideas": {"type": "array", "items": {"type": "string"}, "minItems": 8}},
                },
            },
        },
    }
    assert choice(completion(request, default_reply(request)))[1:] == ("length", 5)


def test_a_server_that_knows_one_token_field_refuses_the_other_as_providers_do() -> None:
    reasoning_only = ("max_completion_tokens",)
    assert "Use 'max_completion_tokens'" in (unsupported_token_field(body(max_tokens=5), reasoning_only) or "")
    assert unsupported_token_field(body(max_completion_tokens=5), ("max_tokens",)) == (
        "Unrecognized request argument supplied: max_completion_tokens"
    )
    assert unsupported_token_field(body(max_tokens=5), ("max_completion_tokens", "max_tokens")) is None
