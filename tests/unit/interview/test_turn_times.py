"""How long a turn is expected to take (docs/interview.md#turns-answered-later), to hand it over
before any call is paid for: this container's turns, read cautiously (the 80th percentile of the
last 16), or before any the model's pace times a typical turn's calls."""

from __future__ import annotations

import pytest
from lambda_agents.answered_later import TurnTimes
from lambda_agents.interview.pending_turns import TURN_CALL_TOKENS, TURN_CALLS_PRIOR, turn_accepted, turn_times
from lambda_agents.llm.speeds import SpeedEstimate

PACE = SpeedEstimate(first_token_s=1.0, tokens_per_s=64.0)


def test_before_any_turn_the_estimate_is_the_models_pace_times_a_typical_turn() -> None:
    assert turn_times().expected_s(PACE) == pytest.approx(TURN_CALLS_PRIOR * (1.0 + TURN_CALL_TOKENS / 64.0))


def test_after_turns_the_estimate_is_a_slow_one_of_them_not_the_average() -> None:
    times = turn_times()
    for seconds in (5.0, 6.0, 7.0, 8.0, 30.0):
        times.record(seconds)
    assert times.expected_s(PACE) == 8.0  # the 80th percentile of five


def test_only_the_last_turns_count() -> None:
    times = TurnTimes(TURN_CALLS_PRIOR, TURN_CALL_TOKENS, window=2)
    for seconds in (90.0, 5.0, 6.0):
        times.record(seconds)
    assert times.expected_s(PACE) == 6.0


def test_the_client_is_told_to_look_within_ten_seconds_however_long_the_turn_is_expected_to_take() -> None:
    assert turn_accepted("s", "t", 117.0).retry_after_s == 10
    assert turn_accepted("s", "t", 0.2).retry_after_s == 1
    assert turn_accepted("s", "t", 117.0).as_response()["expectedSeconds"] == 117


def test_a_slow_turn_is_forgotten_after_fifteen_minutes_so_a_container_that_hands_turns_over_answers_again() -> None:
    """Turns handed to the worker are never timed here: without forgetting, one slow turn would keep
    every later one out of the request for good."""
    now = [0.0]
    times = TurnTimes(TURN_CALLS_PRIOR, TURN_CALL_TOKENS, clock=lambda: now[0])
    times.record(40.0)
    assert times.expected_s(PACE) == 40.0
    now[0] += 899.0
    assert times.expected_s(PACE) == 40.0
    now[0] += 2.0
    assert times.expected_s(PACE) == turn_times().expected_s(PACE)  # the pace again


def test_a_turn_is_never_expected_quicker_than_one_call_at_the_learned_pace() -> None:
    """Quick turns timed before the model slowed: the learned pace says a call now takes 30 s, so
    the turn is expected to take at least that (a prior pace is not such evidence: the turns are)."""
    times = turn_times()
    times.record(2.0)
    slow = SpeedEstimate(first_token_s=25.0, tokens_per_s=60.0, learned=True)
    assert times.expected_s(slow) == pytest.approx(slow.seconds_for(TURN_CALL_TOKENS))
    assert times.expected_s(SpeedEstimate(first_token_s=25.0, tokens_per_s=60.0)) == 2.0
