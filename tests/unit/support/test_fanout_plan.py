"""Spec: the fan-out's settings follow from the account's rate limit and the model's pace: plans a
minute from the share of tokens (prompt + max_tokens, as counted on arrival) or requests, whichever
binds; the plans in flight at that pace; containers of one batch each; whether a cohort fits."""

from __future__ import annotations

import pytest

from devtools.fanout_plan import main, plan_fanout


def test_a_large_account_is_bound_by_tokens_and_needs_many_containers() -> None:
    plan = plan_fanout(tokens_per_minute=2_000_000, requests_per_minute=10_000, cohort=10_000)
    assert plan.cost_tokens == 4_895 and plan.bound_by == "tokens per minute"
    assert plan.plans_per_minute == pytest.approx(0.8 * 2_000_000 / 4_895)
    assert plan.plan_seconds == pytest.approx(51.2)
    assert plan.concurrency == 28  # ceil(326.8 plans/min x 51.2 s / 60 s / 10 users a batch)
    assert plan.cohort_minutes == pytest.approx(30.6, abs=0.1)


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
    assert slow_hour.concurrency > 2 * typical.concurrency


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
    assert "NudgeGeneratorConcurrency=28" in out and "ProviderTokensPerMinute=2000000" in out
    assert "fits the 150-minute window" in out
