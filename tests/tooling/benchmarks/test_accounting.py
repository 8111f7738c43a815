"""The peer benchmark's accounting: served only with exactly 15 nudges, fallbacks keep users served."""

from __future__ import annotations

from benchmarks.peers.accounting import UserOutcome, by_fault_class, summarise
from benchmarks.peers.commander_task import SLOT_COUNT, valid_answer
from benchmarks.peers.fault_mix import Bill


def _short_answer() -> dict[str, object]:
    answer = valid_answer(1)
    answer["appNudges"] = answer["appNudges"][:8]  # type: ignore[index]
    return answer


def test_given_mixed_outcomes_when_summarised_then_only_full_answers_count_as_served() -> None:
    outcomes = [
        UserOutcome(1, valid_answer(1), reported_tokens=100),
        UserOutcome(2, None, "ModelRefused: no"),
        UserOutcome(3, _short_answer(), reported_tokens=50),
    ]
    bill = Bill(requests=6, prompt_tokens=300, completion_tokens=300, tokens_by_user={1: 200, 2: 100, 3: 300})
    row = summarise("side", outcomes, bill, wall_s=1.0)
    assert (row.served, row.fallbacks, row.users_missing_nudges) == (1, 1, 1)
    assert row.calls_per_success == 6.0
    assert row.tokens_per_success == 600.0
    assert row.reported_tokens == 100 and row.billed_for_served == 200
    assert row.failures == {"ModelRefused": 1}


def test_a_side_that_raised_gets_the_fallback_and_leaves_no_nudge_missing() -> None:
    outcome = UserOutcome(4, None, "InstructorRetryException: gave up")
    assert outcome.fell_back and not outcome.served and outcome.nudges_delivered == SLOT_COUNT


def test_given_nobody_served_then_per_success_figures_are_undefined() -> None:
    row = summarise("side", [UserOutcome(1, None, "x")], Bill(requests=3), wall_s=0.1)
    assert row.calls_per_success is None and row.tokens_per_success is None


def test_by_fault_class_counts_a_user_in_each_of_their_classes_with_their_own_calls_and_tokens() -> None:
    outcomes = [UserOutcome(1, valid_answer(1)), UserOutcome(2, None, "refusal"), UserOutcome(3, valid_answer(3))]
    bill = Bill(requests_by_user={1: 1, 2: 1, 3: 3}, tokens_by_user={1: 100, 2: 10, 3: 900})
    rows = by_fault_class(outcomes, bill, {1: [], 2: ["refusal"], 3: ["verbose", "429"]})
    assert [(r.label, r.users, r.served, r.calls_per_success, r.tokens_per_success) for r in rows] == [
        ("clean", 1, 1, 1.0, 100.0),
        ("verbose", 1, 1, 3.0, 900.0),
        ("refusal", 1, 0, None, None),
        ("429", 1, 1, 3.0, 900.0),
    ]
