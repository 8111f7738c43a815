"""The Commander (docs/nudges.md#retries-and-failures): finish_reason / refusal checks, retries, max_tokens
growth, fallback."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lambda_agents.llm import ChatResponse, Usage
from lambda_agents.llm.errors import ProviderUnavailable, RequestRejected
from lambda_agents.llm.truncation import with_margin
from lambda_agents.nudges.commander import Grounding, run_commander
from lambda_agents.nudges.slots import Slot
from lambda_agents.nudges.tokens import CommanderTokenPolicy, estimate_max_tokens

from benchmarks.peers.commander_task import valid_answer as commander_answer
from tests.unit.llm.scripted_model import ScriptedModel

from .conftest import reply, valid_answer


def grounding(slot_count: int = 3, language: str = "en") -> Grounding:
    table = tuple(Slot(i, f"{8 + i:02d}:00", ("anxiety",)) for i in range(slot_count))
    return Grounding("u1", ("anxiety",), language, "1.2.0", "2026-02-02", "Asia/Tokyo", table)  # type: ignore[arg-type]


def run(model: ScriptedModel, slot_count: int = 3, language: str = "en"):  # type: ignore[no-untyped-def]
    waits: list[float] = []
    result = run_commander(model, grounding(slot_count, language), sleep=waits.append)
    return result, waits


def test_a_valid_answer_is_returned_without_fallback() -> None:
    model = ScriptedModel(reply(valid_answer([0, 1, 2])))
    result, waits = run(model)
    assert not result.fallback_used and len(result.output.app_nudges) == 3
    assert waits == []
    request = model.requests[0]
    assert request.max_tokens == estimate_max_tokens(3, 0)
    assert request.parameters.json_output is not None and request.parameters.json_output.strict is True
    assert request.parameters.json_output.schema["properties"]["appNudges"]["minItems"] == 3


def truncated(text: str, max_tokens: int, needed: int) -> ChatResponse:
    """A provider's answer cut where max_tokens ran out, billed max_tokens."""
    return ChatResponse(text[: len(text) * max_tokens // needed], "length", usage=Usage(100, max_tokens))


def test_finish_reason_length_is_retried_with_the_max_tokens_the_partial_answer_asks_for() -> None:
    full = json.dumps(commander_answer(1, slot_count=3))
    first = estimate_max_tokens(3, 0)
    needed = 3 * first  # far more than the Commander's ramp would add (estimate_max_tokens(3, 1))
    model = ScriptedModel(truncated(full, first, needed), reply(full))
    result, waits = run(model)
    assert not result.fallback_used
    asked = [r.max_tokens for r in model.requests]
    assert asked[0] == first and needed <= asked[1] <= with_margin(round(needed * 1.1))
    assert [a.finish_reason for a in result.attempts] == ["length", "stop"]
    assert waits == [1.0]


def test_a_truncated_answer_that_cannot_fit_under_the_ceiling_falls_back_without_another_call() -> None:
    full = json.dumps(commander_answer(1, slot_count=3))
    model = ScriptedModel(truncated(full, estimate_max_tokens(3, 0), 2800))
    waits: list[float] = []
    policy = CommanderTokenPolicy(3, ceiling=2000)
    result = run_commander(model, grounding(3), token_policy=policy, sleep=waits.append)
    assert result.fallback_used and result.fallback_reason == "length"
    assert len(model.requests) == 1 and waits == []
    assert "more than the limit (2000)" in (result.attempts[0].error or "")


def test_each_slot_count_learns_its_own_need_and_starts_there_next_time() -> None:
    answer = json.dumps(commander_answer(1, slot_count=3))
    need = 3 * estimate_max_tokens(3, 0)
    learning = ScriptedModel(
        truncated(answer, estimate_max_tokens(3, 0), need), ChatResponse(answer, "stop", usage=Usage(100, need))
    )
    run(learning)
    learned = ScriptedModel(reply(answer))
    result, _ = run(learned)
    assert not result.fallback_used and len(learned.requests) == 1
    assert learned.requests[0].max_tokens >= need  # no truncation to pay again
    other = ScriptedModel(reply(valid_answer([0, 1, 2, 3])))
    run(other, slot_count=4)
    assert other.requests[0].max_tokens == estimate_max_tokens(4, 0)  # another slot count, another type


def test_finish_reason_content_filter_is_retried_then_falls_back() -> None:
    model = ScriptedModel(*(reply(None, "content_filter") for _ in range(3)))
    result, waits = run(model)
    assert result.fallback_used and result.fallback_reason == "content_filter"
    assert len(result.attempts) == 3 and waits == [1.0, 2.0]
    assert all(n.enabled for n in result.output.app_nudges)


def test_a_refusal_falls_back_at_once() -> None:
    model = ScriptedModel(reply(None, "stop", refusal="I can't help with that"))
    result, waits = run(model)
    assert result.fallback_used and result.fallback_reason == "refusal"
    assert len(model.requests) == 1 and waits == []


def test_after_three_failures_the_fallback_is_used() -> None:
    model = ScriptedModel(*(reply(valid_answer([0, 1])) for _ in range(3)))
    result, waits = run(model)
    assert result.fallback_used and result.fallback_reason == "validation"
    assert len(model.requests) == 3 and waits == [1.0, 2.0]
    assert [n.slot_index for n in result.output.app_nudges] == [0, 1, 2]
    assert not any(p.enabled for p in result.output.tiktok_posts + result.output.x_posts)


def test_slot_indexes_not_from_the_table_are_retried_like_a_wrong_length() -> None:
    model = ScriptedModel(reply(valid_answer([0, 1, 5])), reply(valid_answer([0, 1, 2])))
    result, _ = run(model)
    assert not result.fallback_used
    assert "slotIndex" in model.requests[1].messages[-1]["content"]


def test_unexpected_finish_reason_is_retried() -> None:
    model = ScriptedModel(reply(valid_answer([0, 1, 2]), "function_call"), reply(valid_answer([0, 1, 2])))
    result, _ = run(model)
    assert not result.fallback_used and result.attempts[0].outcome == "unexpected_finish"


def test_a_server_error_is_retried_with_backoff() -> None:
    model = ScriptedModel(ProviderUnavailable("503"), reply(valid_answer([0, 1, 2])))
    result, waits = run(model)
    assert not result.fallback_used and waits == [1.0]


def test_a_rejected_request_falls_back_without_retry() -> None:
    model = ScriptedModel(RequestRejected("schema rejected"))
    result, _ = run(model)
    assert result.fallback_used and result.fallback_reason == "rejected"


def test_failed_attempts_tokens_are_counted() -> None:
    model = ScriptedModel(*(reply(None, "content_filter") for _ in range(3)))
    result, _ = run(model)
    assert result.usage.total_tokens == 3 * 150


@pytest.mark.parametrize("language", ["ja", "en"])
def test_the_fallback_speaks_the_users_language(language: str) -> None:
    model = ScriptedModel(reply(None, refusal="no"))
    result, _ = run(model, language=language)
    assert result.output.app_nudges[0].hook == ("今日も前に進もう" if language == "ja" else "Keep moving forward")


def test_no_slots_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="at least one slot"):
        run_commander(ScriptedModel(), grounding(0))


@settings(max_examples=40, deadline=None)
@given(
    slot_count=st.integers(1, 20),
    failures=st.lists(
        st.sampled_from(["length", "content_filter", "refusal", "bad_json", "wrong_length", "all_disabled"]),
        min_size=3,
        max_size=3,
    ),
    language=st.sampled_from(["ja", "en"]),
)
def test_zero_nudges_for_a_user_with_slots_is_impossible(slot_count: int, failures: list[str], language: str) -> None:
    def step(kind: str) -> ChatResponse:
        indexes = list(range(slot_count))
        return {
            "length": reply("{", "length"),
            "content_filter": reply(None, "content_filter"),
            "refusal": reply(None, refusal="no"),
            "bad_json": reply("not json"),
            "wrong_length": reply(valid_answer(indexes[:-1] or [0, 0])),
            "all_disabled": reply(valid_answer(indexes, enabled=False)),
        }[kind]

    model = ScriptedModel(*(step(kind) for kind in failures))
    result = run_commander(model, grounding(slot_count, language), sleep=lambda _: None)
    assert result.fallback_used
    assert len(result.output.app_nudges) == slot_count
    assert all(nudge.enabled for nudge in result.output.app_nudges)
    assert not any(post.enabled for post in result.output.tiktok_posts + result.output.x_posts)


def test_a_slow_run_falls_back_before_the_deadline_instead_of_waiting_for_a_retry() -> None:
    from lambda_agents.llm import Deadline
    from lambda_agents.llm.speeds import SpeedEstimate

    now = [0.0]
    deadline = Deadline(expires_at=4.0, clock=lambda: now[0])

    class SlowModel(ScriptedModel):
        def complete(self, request):  # type: ignore[no-untyped-def]
            now[0] += 2.5  # the call itself used most of the remaining time
            return super().complete(request)

    # Fast enough to start the first attempt in the 4 s, not a retry after its wait.
    model = SlowModel(reply(None, "content_filter"), speed=SpeedEstimate(first_token_s=0.5, tokens_per_s=10_000.0))
    result = run_commander(model, grounding(3), deadline=deadline, sleep=lambda _: None)
    assert result.fallback_used and result.fallback_reason == "deadline"
    assert len(model.requests) == 1 and len(result.output.app_nudges) == 3
