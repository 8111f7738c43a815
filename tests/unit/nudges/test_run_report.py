"""The per-run counts the generator emits as metrics."""

from __future__ import annotations

from lambda_agents.nudges.generation import GenerationOutcome
from lambda_agents.nudges.run_report import RunReport


def test_the_report_counts_users_nudges_fallbacks_by_cause_attempts_and_finish_reasons() -> None:
    report = RunReport()
    report.add(GenerationOutcome("a", "d", "generated", 6, 6, attempts=1, finish_reasons=("stop",)).as_dict())
    report.add(
        GenerationOutcome("b", "d", "generated", 4, 4, True, "content_filter", 3, ("content_filter",) * 3).as_dict()
    )
    report.add(GenerationOutcome("c", "d", "already_generated").as_dict())
    assert (report.users_processed, report.nudges_generated, report.attempts) == (3, 10, 4)
    assert report.fallbacks_by_cause == {"content_filter": 1}
    assert report.finish_reasons == {"stop": 1, "content_filter": 3}
    assert report.statuses == {"generated": 2, "already_generated": 1}


def test_the_report_sums_the_tokens_and_their_cached_part_of_every_outcome() -> None:
    # An outcome stored before the cached count existed (an idempotency record) counts none.
    report = RunReport()
    report.add(GenerationOutcome("a", "d", "generated", 6, 6, total_tokens=2_000, cached_tokens=1_024).as_dict())
    report.add(GenerationOutcome("b", "d", "answer_unusable", total_tokens=900, cached_tokens=0).as_dict())
    stored_earlier = GenerationOutcome("c", "d", "generated", 3, 3, total_tokens=700).as_dict()
    del stored_earlier["cachedTokens"]
    report.add(stored_earlier)

    assert (report.tokens, report.cached_tokens) == (3_600, 1_024)


def test_the_report_sums_what_the_plans_cost_and_counts_an_unpriced_or_older_outcome_as_nothing() -> None:
    report = RunReport()
    report.add(GenerationOutcome("a", "d", "generated", 6, 6, total_tokens=2_000, cost_usd=0.012).as_dict())
    report.add(GenerationOutcome("b", "d", "generated", 6, 6, total_tokens=2_000, cost_usd=None).as_dict())
    stored_earlier = GenerationOutcome("c", "d", "generated", 3, 3, total_tokens=700).as_dict()
    del stored_earlier["costUsd"]
    report.add(stored_earlier)
    assert report.cost_usd == 0.012
