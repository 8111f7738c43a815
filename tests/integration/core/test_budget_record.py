"""The shared output sizes' record on moto (InterviewsTable built from template.yaml): what the
worker writes the request reads back, need for need, one item per model, kept a day."""

from __future__ import annotations

import time
from typing import Any

import pytest
from lambda_agents.storage.output_sizes import DynamoBudgetRecord

pytestmark = pytest.mark.integration
TABLES = ["InterviewsTable"]


def test_what_the_worker_writes_the_request_reads_back(aws: Any) -> None:
    record = DynamoBudgetRecord("InterviewsTable")
    assert record.read("gpt-4o") == {}
    needs = {"gpt-4o|json_schema|0123456789abcdef": [113, 98], "gpt-4o|call|interview.greeter": [40]}
    record.write("gpt-4o", needs)
    record.write("gpt-4o", {"gpt-4o|call|interview.greeter": [41]})  # the last write holds all its container knows
    assert record.read("gpt-4o") == {"gpt-4o|call|interview.greeter": [41]}
    (item,) = aws.scan(TableName="InterviewsTable")["Items"]
    assert (item["pk"]["S"], item["sk"]["S"]) == ("BUDGETS#gpt-4o", "BUDGETS")
    assert 0 < int(item["expiresAt"]["N"]) - time.time() <= 86_400
