"""The peer benchmark's fault plan is a pure function of (seed, user, attempt, max_tokens)."""

from __future__ import annotations

import json

from benchmarks.peers.commander_task import SLOT_COUNT, served_by_model
from benchmarks.peers.fault_mix import DEFAULT_CAP, AnswerSizes, FaultPlan, FaultRates, user_of
from devtools.fake_openai import Fault, Reply, Slow


def test_given_the_same_seed_when_plans_are_drawn_twice_then_they_are_identical() -> None:
    first = [FaultPlan.for_user(7, number) for number in range(1, 41)]
    second = [FaultPlan.for_user(7, number) for number in range(1, 41)]
    assert first == second
    assert first != [FaultPlan.for_user(8, number) for number in range(1, 41)]


def test_given_a_verbose_answer_when_max_tokens_is_below_it_then_it_is_truncated_at_the_cap() -> None:
    plan = FaultPlan(user_number=3, answer_tokens=4500)
    short = plan.step(0, 4095, None)
    assert isinstance(short, Reply) and short.finish_reason == "length"
    assert short.completion_tokens == 4095
    full = plan.step(1, 4725, None)
    assert isinstance(full, Reply) and full.finish_reason == "stop"
    assert served_by_model(json.loads(full.content or ""))


def test_given_no_max_tokens_when_the_answer_exceeds_the_default_cap_then_it_is_truncated() -> None:
    plan = FaultPlan(user_number=3, answer_tokens=DEFAULT_CAP + 1)
    step = plan.step(0, None, "final_result")
    assert isinstance(step, Reply) and step.finish_reason == "length" and step.tool_name == "final_result"


def test_given_transient_faults_then_they_come_first_and_the_answer_after_them() -> None:
    plan = FaultPlan(user_number=5, answer_tokens=1800, transient=(429, 500), slow_first_answer=True)
    rate_limited, unavailable, slow = plan.step(0, 4095, None), plan.step(1, 4095, None), plan.step(2, 4095, None)
    assert isinstance(rate_limited, Fault) and rate_limited.status == 429 and rate_limited.retry_after
    assert isinstance(unavailable, Fault) and unavailable.status == 500
    assert isinstance(slow, Slow) and isinstance(slow.then, Reply) and slow.then.finish_reason == "stop"
    assert isinstance(plan.step(3, 4095, None), Reply)


def test_given_a_wrong_length_once_then_only_the_first_answer_is_short() -> None:
    plan = FaultPlan(user_number=9, answer_tokens=1800, answer_faults=("wrong_length",))
    first, second = plan.step(0, 4095, None), plan.step(1, 4095, None)
    assert isinstance(first, Reply) and isinstance(second, Reply)
    assert len(json.loads(first.content or "")["appNudges"]) == SLOT_COUNT - 1
    assert served_by_model(json.loads(second.content or ""))


def test_given_a_refusing_user_then_every_attempt_refuses() -> None:
    plan = FaultPlan(user_number=2, answer_tokens=1800, refuses=True)
    assert all(isinstance(s := plan.step(n, 8000, None), Reply) and s.refusal for n in range(3))


def test_given_rates_of_zero_then_no_user_has_a_fault() -> None:
    rates = FaultRates(0, 0, 0, 0, 0, 0, 0)
    assert all(FaultPlan.for_user(1, number, rates).labels == [] for number in range(50))


def test_the_user_is_found_in_the_prompt_or_not_at_all() -> None:
    assert user_of({"messages": [{"role": "user", "content": '{"appVersion": "2.4.0 (bench-user-017)"}'}]}) == 17
    assert user_of({"messages": [{"role": "user", "content": "hello"}]}) is None


def test_given_answer_sizes_then_verbose_users_draw_from_their_range_and_are_labelled_verbose() -> None:
    sizes = AnswerSizes(compact=(600, 950), verbose=(2700, 3300))
    plans = [FaultPlan.for_user(11, n, FaultRates(verbose=1 / 3), sizes) for n in range(1, 201)]
    verbose = [plan for plan in plans if plan.verbose]
    assert 50 <= len(verbose) <= 85
    assert all(2700 <= plan.answer_tokens <= 3300 and "verbose" in plan.labels for plan in verbose)
    assert all(600 <= plan.answer_tokens <= 950 for plan in plans if not plan.verbose)


def test_a_truncated_answer_is_the_first_max_tokens_share_of_the_text_billed_at_max_tokens() -> None:
    plan = FaultPlan(user_number=4, answer_tokens=3000, verbose=True)
    whole, cut = plan.step(1, 4000, None), plan.step(0, 1000, None)
    assert isinstance(whole, Reply) and isinstance(cut, Reply)
    assert cut.content == (whole.content or "")[: len(whole.content or "") * 1000 // 3000]
    assert (cut.finish_reason, cut.completion_tokens) == ("length", 1000)


def test_given_a_budget_below_where_the_filter_stops_then_the_budget_runs_out_first() -> None:
    plan = FaultPlan(user_number=4, answer_tokens=3000, answer_faults=("content_filter",))
    step = plan.step(0, 500, None)
    assert isinstance(step, Reply) and step.finish_reason == "length"
