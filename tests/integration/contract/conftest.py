"""The contract suites run against one local runner per module (offline model, embedded moto)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devtools.runner import LocalRunner
from tests.support.served_runner import offline_runner


@pytest.fixture(scope="module")
def runner() -> Iterator[LocalRunner]:
    with offline_runner() as started:
        yield started
