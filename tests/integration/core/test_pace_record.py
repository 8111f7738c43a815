"""The shared pace's record on moto (ChatTable built from template.yaml): what the worker writes
the request reads back, reading for reading, one item per model, kept a day."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from lambda_agents.storage.dynamodb import dynamodb_resource
from lambda_agents.storage.pace import DynamoPaceRecord

from tests.support.moto_tables import tables_on_moto

pytestmark = pytest.mark.integration


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with tables_on_moto(
        monkeypatch, ["ChatTable"], environment={}, cleared=(), reset_ports=dynamodb_resource.cache_clear
    ) as client:
        yield client


def test_what_the_worker_writes_the_request_reads_back(aws: Any) -> None:
    record = DynamoPaceRecord("ChatTable")
    assert record.read("gpt-4o") == []
    readings = [(1_800_000_000.125, "rate", 61.25), (1_800_000_000.125, "first_token", 0.8)]
    record.write("gpt-4o", readings)
    record.write("gpt-4o", readings[:1])  # the last write holds all its container remembers
    assert record.read("gpt-4o") == readings[:1]
    (item,) = aws.scan(TableName="ChatTable")["Items"]
    assert (item["pk"]["S"], item["sk"]["S"]) == ("PACE#gpt-4o", "PACE")
    assert 0 < int(item["expiresAt"]["N"]) - time.time() <= 86_400
