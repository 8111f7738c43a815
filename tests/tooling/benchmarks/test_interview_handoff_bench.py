"""The interview hand-off benchmark's quick mode, through both interview functions on moto and the
fake provider: a handed-over turn's worker makes fewer calls, and is billed less, when it replays
what its request paid for than when the record is disabled, and the interview's usageTotal is what
the provider billed (with the cut call's max_tokens, the product's safe side); a fresh request
container that plans with the worker's output sizes hands fewer last answers over than one without
them. Orderings and equalities only: the sides run in the same process, one after the other."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchmarks import interview_handoff_bench


@pytest.fixture(scope="module")
def quick() -> Iterator[tuple[interview_handoff_bench.HandoffFigures, str]]:
    with pytest.MonkeyPatch.context() as patch:
        printed: list[str] = []
        patch.setattr("builtins.print", lambda *parts, **_: printed.append(" ".join(str(p) for p in parts)))
        figures = interview_handoff_bench.main_quick()
    yield figures, "\n".join(printed)


def test_the_worker_that_replays_the_paid_calls_makes_fewer_calls_and_is_billed_less(
    quick: tuple[interview_handoff_bench.HandoffFigures, str],
) -> None:
    replayed, again = quick[0].replays
    assert replayed.request_calls == again.request_calls == len(interview_handoff_bench.CUT_SCRIPT)
    assert replayed.worker_calls < again.worker_calls
    assert again.worker_calls == len(interview_handoff_bench.WHOLE_TURN)  # the baseline runs the turn again
    assert replayed.billed_tokens < again.billed_tokens
    assert replayed.cost_usd < again.cost_usd


def test_the_interviews_usage_total_is_what_the_provider_billed_on_both_sides(
    quick: tuple[interview_handoff_bench.HandoffFigures, str],
) -> None:
    for side in quick[0].replays:
        assert side.usage_matches == side.turns > 0, side.label


def test_the_request_with_the_workers_output_sizes_hands_fewer_last_answers_over(
    quick: tuple[interview_handoff_bench.HandoffFigures, str],
) -> None:
    shared, alone = quick[0].sizes
    assert alone.handed_over == alone.turns  # the Auditor's prior never fits after the Reviewer
    assert shared.handed_over < alone.handed_over


def test_the_quick_mode_says_so_and_prints_both_tables(
    quick: tuple[interview_handoff_bench.HandoffFigures, str],
) -> None:
    printed = quick[1]
    assert printed.startswith("Quick mode:")
    assert "| replayed (the product) |" in printed and "| made again (record disabled) |" in printed
    assert "| shared (the product) |" in printed and "| not shared (the request's own sizes) |" in printed
