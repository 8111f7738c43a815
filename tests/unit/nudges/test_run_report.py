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
