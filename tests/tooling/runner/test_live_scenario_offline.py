"""The live suite's route scenario (tests/live/routes.py), run offline against the local runner:
its requests and expected answers hold before `make test-live` sends them to a deployed stack."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.live.routes import Caller, run_every_route, template_routes, url_for
from tests.support.http_json import exchange
from tests.support.served_runner import served_offline, stage_url

pytestmark = pytest.mark.integration

IDENTITY = {"user": {"X-Local-User": "live-user"}, "admin": {"X-Local-Admin": "live-admin"}, "anonymous": {}}


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with served_offline() as root:
        yield stage_url(root)  # the API as the live suite calls a stack's: its ApiUrl, with the stage


def test_given_the_local_runner_when_the_live_scenario_runs_then_every_route_answers_as_expected(base_url: str) -> None:
    def send(caller: Caller, method: str, path: str, body: Any) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json", **IDENTITY[caller]}
        status, _, answer = exchange(url_for(base_url, path), method, headers, data, timeout_s=60)
        return status, answer

    run = run_every_route(send)

    assert run.reached_routes() == template_routes()
