"""Spec: the fan-out's settings follow from the account's rate limit and the model's pace: plans a
minute from the share of tokens (prompt + max_tokens, as counted on arrival) or requests, whichever
binds; the plans in flight at that pace; containers of one batch each; whether a cohort fits."""

from __future__ import annotations

import pytest
from lambda_agents.nudges.tokens import PLAN_PROMPT_TOKENS

from devtools.fanout_plan import main, plan_fanout, plan_prompt_tokens


def test_a_large_account_is_bound_by_tokens_and_needs_many_containers() -> None:
    plan = plan_fanout(tokens_per_minute=2_000_000, requests_per_minute=10_000, prompt_tokens=800, cohort=10_000)
    assert plan.cost_tokens == 4_895 and plan.bound_by == "tokens per minute"
    assert plan.plans_per_minute == pytest.approx(0.8 * 2_000_000 / 4_895)
    assert plan.plan_seconds == pytest.approx(51.2)
    # A container's batch lasts its slowest plan (35 tokens/s): ceil(326.8 x 86.9 s / 60 s / 10 users).
    assert plan.batch_seconds == pytest.approx(1.2 + 3_000 / 35)
    assert plan.concurrency == 48
    assert plan.cohort_minutes == pytest.approx(30.6, abs=0.1)


def test_the_prompt_is_measured_on_the_commanders_request_and_the_scheduler_plans_with_no_less() -> None:
    measured = plan_prompt_tokens()
    assert 1_000 < measured <= PLAN_PROMPT_TOKENS
    assert plan_prompt_tokens(recent_days=0) < measured  # history is part of what the provider counts
    assert plan_fanout(tokens_per_minute=1_000_000, requests_per_minute=0).cost_tokens == measured + 4_095


def test_requests_bind_when_plans_are_small() -> None:
    plan = plan_fanout(tokens_per_minute=10_000_000, requests_per_minute=500, max_tokens=500, prompt_tokens=100)
    assert plan.bound_by == "requests per minute" and plan.plans_per_minute == pytest.approx(400)


def test_a_small_account_keeps_the_minimum_and_says_a_cohort_does_not_fit() -> None:
    plan = plan_fanout(tokens_per_minute=30_000, requests_per_minute=500, cohort=10_000)
    assert plan.concurrency == 2
    assert any("does NOT fit" in line for line in plan.lines(10_000, 150))


def test_a_slower_model_needs_more_plans_in_flight_for_the_same_limit() -> None:
    typical = plan_fanout(tokens_per_minute=2_000_000, requests_per_minute=0)
    slow_hour = plan_fanout(tokens_per_minute=2_000_000, requests_per_minute=0, tokens_per_second=20)
    assert slow_hour.plans_per_minute == typical.plans_per_minute
    assert slow_hour.concurrency > 1.5 * typical.concurrency


def test_the_maximum_concurrency_stays_within_what_sqs_accepts() -> None:
    assert plan_fanout(tokens_per_minute=10_000_000_000, requests_per_minute=0).concurrency == 1000


@pytest.mark.parametrize(
    "argv",
    [[], ["--tokens-per-minute", "1000", "--share", "0"], ["--tokens-per-minute", "1000", "--share", "1.5"]],
)
def test_the_command_refuses_a_plan_without_limits_or_with_a_share_outside_the_account(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2


def test_the_command_prints_the_parameters_to_deploy_with(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--tokens-per-minute", "2000000", "--requests-per-minute", "10000", "--cohort", "10000"]) == 0
    out = capsys.readouterr().out
    assert "NudgeGeneratorConcurrency=42" in out and "ProviderTokensPerMinute=2000000" in out
    assert "fits the 150-minute window" in out
