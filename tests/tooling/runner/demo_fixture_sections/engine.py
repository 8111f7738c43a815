"""A demo section that passes: it uses the report, the tables and a function's environment."""

from __future__ import annotations

import os
from typing import Any


def run(ctx: Any) -> None:
    ctx.section("Fixture engine section")
    env = ctx.use_function("ChatFunction", {"OPENAI_MODEL": "demo-model"})
    assert os.environ["CHAT_TABLE"] == env["CHAT_TABLE"] == "ChatTable"
    assert ctx.env_for("ChatFunction")["OPENAI_MODEL"] == "demo-model"
    assert env["AI_AGENT_MODE"] == "mock"
    ctx.dynamodb.put_item(TableName="ChatTable", Item={"pk": {"S": "s1"}, "sk": {"S": "m1"}})
    count = ctx.dynamodb.scan(TableName="ChatTable")["Count"]
    ctx.table(["table", "items", "note"], [["ChatTable", count, "日本語の行"], ["UsersTable", 0, "-"]])
    ctx.line("engine fixture done")
