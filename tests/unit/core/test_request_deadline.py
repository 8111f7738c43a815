"""An API request's deadline is the earlier of its own 29 s (from API Gateway's request time, so a
cold start counts) and the Lambda's remaining time, each less the margin kept to store and answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from lambda_agents.api.time_budget import (
    ANSWER_MARGIN_S,
    API_GATEWAY_TIMEOUT_S,
    request_deadline,
    request_received_at,
)

NOW = 1_800_000_000.0  # wall clock, epoch seconds
MONOTONIC = 500.0


@dataclass
class Context:
    remaining_ms: int

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def api_event(received_s_ago: float) -> dict[str, Any]:
    return {"httpMethod": "POST", "requestContext": {"requestTimeEpoch": int((NOW - received_s_ago) * 1000)}}


def left(event: Any, context: Any) -> float | None:
    deadline = request_deadline(event, context, wall_clock=lambda: NOW, clock=lambda: MONOTONIC)
    return None if deadline is None else round(deadline.remaining_s(), 3)


def test_given_a_fresh_request_and_a_longer_lambda_timeout_then_the_request_budget_decides() -> None:
    assert left(api_event(0.5), Context(60_000)) == API_GATEWAY_TIMEOUT_S - 0.5 - ANSWER_MARGIN_S


def test_given_a_cold_start_before_the_handler_ran_then_its_time_is_taken_from_the_budget() -> None:
    assert left(api_event(4.0), Context(29_000)) == 29.0 - 4.0 - 3.0


def test_given_less_lambda_time_than_request_time_then_the_lambda_decides() -> None:
    assert left(api_event(1.0), Context(10_000)) == 10.0 - 3.0


def test_given_a_request_about_to_expire_then_no_time_is_left() -> None:
    assert left(api_event(27.5), Context(60_000)) == 0.0


def test_given_an_api_gateway_clock_ahead_of_ours_then_at_most_the_whole_budget_counts() -> None:
    assert left(api_event(-5.0), Context(60_000)) == API_GATEWAY_TIMEOUT_S - ANSWER_MARGIN_S


def test_given_a_request_older_than_api_gateway_allows_then_it_is_a_replayed_event_and_the_lambda_decides() -> None:
    assert left(api_event(3600.0), Context(20_000)) == 17.0


@pytest.mark.parametrize("event", [{}, {"requestContext": {}}, {"requestContext": {"requestTimeEpoch": "x"}}, None])
def test_given_no_usable_request_time_then_the_lambda_decides(event: Any) -> None:
    assert left(event, Context(20_000)) == 17.0


def test_given_neither_a_request_time_nor_a_lambda_context_then_there_is_no_deadline() -> None:
    assert left({"movement": "review"}, None) is None


@pytest.mark.parametrize("epoch", [True, -1, 0, float("nan"), float("inf"), "1800000000000", None])
def test_a_request_time_that_is_not_a_positive_number_is_no_request_time(epoch: Any) -> None:
    assert request_received_at({"requestContext": {"requestTimeEpoch": epoch}}) is None


def test_the_request_time_is_read_in_milliseconds() -> None:
    assert request_received_at({"requestContext": {"requestTimeEpoch": 1_800_000_000_250}}) == 1_800_000_000.25
