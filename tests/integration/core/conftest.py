"""The moto fixture the storage adapters' modules here share: each module names the tables it
needs in a module-level ``TABLES`` list, and ``aws`` builds them from template.yaml."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from lambda_agents.storage.dynamodb import dynamodb_resource

from tests.support.moto_tables import tables_on_moto


@pytest.fixture
def aws(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The DynamoDB client of a moto holding the requesting module's ``TABLES``."""
    tables = request.module.TABLES
    with tables_on_moto(
        monkeypatch, tables, environment={}, cleared=(), reset_ports=dynamodb_resource.cache_clear
    ) as client:
        yield client
