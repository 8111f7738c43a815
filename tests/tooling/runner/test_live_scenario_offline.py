"""The live suite's route scenario (tests/live/routes.py), run offline against the local runner:
its requests and expected answers hold before `make test-live` sends them to a deployed stack."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from devtools.runner_template import route_specs
from devtools.template import load_template
from tests.live.routes import Caller, run_every_route
from tests.support.served_runner import served_offline

pytestmark = pytest.mark.integration

IDENTITY = {"user": {"X-Local-User": "live-user"}, "admin": {"X-Local-Admin": "live-admin"}, "anonymous": {}}


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with served_offline() as url:
        yield url


def test_given_the_local_runner_when_the_live_scenario_runs_then_every_route_answers_as_expected(base_url: str) -> None:
    def send(caller: Caller, method: str, path: str, body: Any) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json", **IDENTITY[caller]}
        request = urllib.request.Request(f"{base_url}{path}", data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    run = run_every_route(send)

    called = {(method, route) for method, route, status in run.calls if status < 400 or status == 404}
    assert called == {(route.method, route.path) for route in route_specs(load_template())}
