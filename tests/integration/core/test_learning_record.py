"""The shared learning's record on moto (ChatTable and InterviewsTable built from template.yaml):
what the worker writes the request reads back, part for part, one item per model, kept a day."""

from __future__ import annotations

import time
from typing import Any

import pytest
from lambda_agents.storage.learning import DynamoLearningRecord

pytestmark = pytest.mark.integration

TABLES = ["ChatTable", "InterviewsTable"]


def test_what_the_worker_writes_the_request_reads_back(aws: Any) -> None:
    record = DynamoLearningRecord("ChatTable")
    assert record.read("gpt-4o") == {}
    readings = [[1_800_000_000.125, "rate", 61.25], [1_800_000_000.125, "first_token", 0.8]]
    record.write("gpt-4o", {"pace": readings})
    record.write("gpt-4o", {"pace": readings[:1]})  # the last write holds all its container remembers
    assert record.read("gpt-4o") == {"pace": readings[:1]}
    (item,) = aws.scan(TableName="ChatTable")["Items"]
    assert (item["pk"]["S"], item["sk"]["S"]) == ("LEARNED#gpt-4o", "LEARNED")
    assert 0 < int(item["expiresAt"]["N"]) - time.time() <= 86_400


def test_the_interviews_pace_and_output_sizes_are_one_item(aws: Any) -> None:
    record = DynamoLearningRecord("InterviewsTable")
    needs = {"gpt-4o|json_schema|0123456789abcdef": [113, 98], "gpt-4o|call|interview.greeter": [40]}
    pace = [[1_800_000_000.125, "rate", 61.25]]
    record.write("gpt-4o", {"pace": pace, "needs": needs})
    record.write("gpt-4o", {"pace": pace, "needs": {"gpt-4o|call|interview.greeter": [41]}})
    assert record.read("gpt-4o") == {"pace": pace, "needs": {"gpt-4o|call|interview.greeter": [41]}}
    (item,) = aws.scan(TableName="InterviewsTable")["Items"]
    assert (item["pk"]["S"], item["sk"]["S"]) == ("LEARNED#gpt-4o", "LEARNED")
    assert 0 < int(item["expiresAt"]["N"]) - time.time() <= 86_400


def test_a_write_leaves_the_parts_its_container_did_not_learn_as_another_wrote_them(aws: Any) -> None:
    record = DynamoLearningRecord("InterviewsTable")
    pace = [[1_800_000_000.125, "rate", 61.25]]
    record.write("gpt-4o", {"pace": pace, "needs": {"gpt-4o|call|interview.greeter": [40]}})
    record.write("gpt-4o", {"needs": {"gpt-4o|call|interview.auditor": [113]}})  # a container with no pace yet
    assert record.read("gpt-4o") == {"pace": pace, "needs": {"gpt-4o|call|interview.auditor": [113]}}
