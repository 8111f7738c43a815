"""The local API ends a request like API Gateway (REST): past 29 s the client gets 504 "Endpoint
request timed out", whatever the function's own timeout, and what the function returns later is
dropped; a handler sees API Gateway's request time, from which the product takes its deadline."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from lambda_agents.api.time_budget import API_GATEWAY_TIMEOUT_S

from devtools.local_aws import LocalAws
from devtools.runner import LocalRunner
from devtools.runner_api import API_GATEWAY_TIMEOUT_S as RUNNER_LIMIT_S
from devtools.runner_api import HttpRequest
from devtools.runner_lambda import Handler
from devtools.runner_template import FunctionSpec
from tests.tooling.runner import fake_app

pytestmark = pytest.mark.integration


class ManualClock:
    """The runner's clock, moved by hand; it records which thread read it, so a test can tell when
    a request has arrived and queued for an invocation (two reads) without guessing a time."""

    def __init__(self) -> None:
        self.now = 100.0
        self.readers: list[int] = []

    def __call__(self) -> float:
        self.readers.append(threading.get_ident())
        return self.now

    def reads_by(self, thread: threading.Thread) -> int:
        return self.readers.count(thread.ident or -1)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


class SlowFunction:
    """A handler that takes ``takes_s`` on the runner's clock, then answers (or fails)."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.takes_s = 0.0
        self.seen: list[dict[str, Any]] = []
        self.entered, self.release = threading.Event(), threading.Event()

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.seen.append(event)
        if event["body"] == '"hold"':  # a worker holding the runner for 40 s
            self.entered.set()
            self.release.wait(timeout=10)
            self.clock.now += 40.0
            return {"statusCode": 200, "body": "{}"}
        self.clock.now += self.takes_s
        if event["body"] == '"fail"':
            raise RuntimeError("the function failed after its work")
        return {"statusCode": 200, "body": json.dumps({"took": self.takes_s})}


@pytest.fixture
def function(clock: ManualClock) -> SlowFunction:
    return SlowFunction(clock)


@pytest.fixture
def runner(local_aws: LocalAws, clock: ManualClock, function: SlowFunction) -> Iterator[LocalRunner]:
    def loader(spec: FunctionSpec) -> Handler:
        return function

    started = LocalRunner(
        fake_app.mini_template(), environ={}, local_aws=local_aws, handler_loader=loader, clock=clock
    ).start()
    try:
        yield started
    finally:
        local_aws.reset()


def post(runner: LocalRunner, body: str = "{}") -> tuple[int, Any]:
    request = HttpRequest("POST", "/items", "", [("X-Local-User", "u-1")], body.encode())
    response = runner.handle_http(request)
    return response.status, json.loads(response.body)


def test_the_runner_uses_the_products_api_gateway_limit() -> None:
    assert RUNNER_LIMIT_S == API_GATEWAY_TIMEOUT_S == 29.0


def test_given_a_function_answering_within_29_s_then_its_answer_is_returned(
    runner: LocalRunner, function: SlowFunction
) -> None:
    function.takes_s = 28.5
    assert post(runner) == (200, {"took": 28.5})


def test_given_a_function_answering_after_29_s_then_the_client_gets_504_and_the_answer_is_dropped(
    runner: LocalRunner, function: SlowFunction
) -> None:
    function.takes_s = 29.5
    assert post(runner) == (504, {"message": "Endpoint request timed out"})
    assert len(function.seen) == 1  # it ran, as it would in AWS


def test_given_a_function_failing_after_29_s_then_the_client_gets_504_not_502(
    runner: LocalRunner, function: SlowFunction
) -> None:
    function.takes_s = 40.0
    assert post(runner, '"fail"')[0] == 504
    function.takes_s = 1.0
    assert post(runner, '"fail"')[0] == 502


def test_the_handler_sees_api_gateways_request_time(runner: LocalRunner, function: SlowFunction) -> None:
    before = time.time()
    post(runner)
    received_ms = function.seen[0]["requestContext"]["requestTimeEpoch"]
    assert int(before * 1000) <= received_ms <= int(time.time() * 1000)


def test_given_a_request_waiting_for_another_function_then_the_wait_is_not_api_gateways(
    runner: LocalRunner, function: SlowFunction, clock: ManualClock
) -> None:
    """Locally one invocation runs at a time; in AWS a read would not wait for a worker to end,
    so the 29 s start when the function starts, not while it waits its turn here."""
    function.takes_s = 1.0
    worker = threading.Thread(target=runner.invoke, args=("StoreFunction", {"body": '"hold"'}))
    worker.start()
    assert function.entered.wait(timeout=10)
    answers: list[tuple[int, Any]] = []
    reader = threading.Thread(target=lambda: answers.append(post(runner)))
    reader.start()
    # The reader took its arrival time and its place in the invocations' queue, and waits for the
    # worker's invocation to end (however long a busy machine took to get it there).
    queued_by = time.monotonic() + 10
    while clock.reads_by(reader) < 2 and time.monotonic() < queued_by:
        time.sleep(0.005)
    assert clock.reads_by(reader) == 2
    function.release.set()
    worker.join(timeout=10)
    reader.join(timeout=10)
    assert answers == [(200, {"took": 1.0})]
    assert [event["body"] for event in function.seen] == ['"hold"', "{}"]
