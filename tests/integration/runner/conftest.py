"""Fixtures: the runner on the fake application, on an embedded moto server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from devtools.runner import LocalRunner
from tests.integration.runner import fake_app


@pytest.fixture
def calls() -> Iterator[list[tuple[str, Any]]]:
    fake_app.calls.clear()
    yield fake_app.calls
    fake_app.calls.clear()


@pytest.fixture
def runner() -> Iterator[LocalRunner]:
    environ = {"AWS_DEFAULT_REGION": "us-east-1"}
    with LocalRunner(fake_app.mini_template(), environ=environ, handler_loader=fake_app.fake_loader) as started:
        yield started
        started.aws.reset()
