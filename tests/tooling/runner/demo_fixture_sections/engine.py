"""A demo section that passes: it uses the report, the tables and a function's environment."""

from __future__ import annotations

import os
import sys
from typing import Any


def run(ctx: Any) -> None:
    ctx.section("Fixture engine section", "A section that passes.")
    env = ctx.use_function("ChatFunction", {"OPENAI_MODEL": "demo-model"})
    assert os.environ["CHAT_TABLE"] == env["CHAT_TABLE"] == "ChatTable"
    assert ctx.env_for("ChatFunction")["OPENAI_MODEL"] == "demo-model"
    assert env["AI_AGENT_MODE"] == "mock"
    ctx.dynamodb.put_item(TableName="ChatTable", Item={"pk": {"S": "s1"}, "sk": {"S": "m1"}})
    count = ctx.dynamodb.scan(TableName="ChatTable")["Count"]
    ctx.table(["table", "items", "note"], [["ChatTable", count, "日本語の行"], ["UsersTable", 0, "-"]])
    # What functions print beside the report: an EMF metric line, a write to the descriptor, stderr.
    print('{"_aws": {"CloudWatchMetrics": []}, "FixtureMetric": [1.0]}')
    os.write(1, b'{"level": "INFO", "message": "fixture fd write"}\n')
    print('{"level": "WARNING", "message": "fixture stderr"}', file=sys.stderr)
    ctx.line("engine fixture done")
