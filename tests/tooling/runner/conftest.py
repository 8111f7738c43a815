"""Fixtures: the runner on the fake application, on an embedded moto server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from devtools.local_aws import LocalAws
from devtools.runner import LocalRunner
from tests.tooling.runner import fake_app


@pytest.fixture
def calls() -> Iterator[list[tuple[str, Any]]]:
    fake_app.calls.clear()
    yield fake_app.calls
    fake_app.calls.clear()


@pytest.fixture(scope="session")
def local_aws() -> Iterator[LocalAws]:
    """One embedded moto server for the session; each test's runner resets it afterwards."""
    with LocalAws({"AWS_DEFAULT_REGION": "us-east-1"}) as aws:
        yield aws


@pytest.fixture
def runner(local_aws: LocalAws) -> Iterator[LocalRunner]:
    started = LocalRunner(
        fake_app.mini_template(), environ={}, local_aws=local_aws, handler_loader=fake_app.fake_loader
    ).start()
    try:
        yield started
    finally:
        local_aws.reset()
