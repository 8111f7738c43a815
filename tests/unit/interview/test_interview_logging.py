"""The agents' log (docs/interview.md#logging): agent, sessionId and tool on every record, through
the Powertools logger; no applicant or assistant text at INFO (only at DEBUG)."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from lambda_agents.interview.agents.loop import AgentEnv
from lambda_agents.interview.agents.offline import RESPONDERS
from lambda_agents.interview.agents.orchestrator import Orchestrator
from lambda_agents.interview.agents.reviewers import SubAgents
from lambda_agents.interview.interview_log import PowertoolsInterviewLog
from lambda_agents.interview.rules.run_steps import InMemoryRunSteps
from lambda_agents.llm.offline_model import OfflineModel

from tests.support.logs import captured_logs

from .support import JOB, ConsentedOnCreate, InMemoryRepository, harness

CANARY = "カナリア応募者テキスト"
LINES = [
    f"こんにちは{CANARY}",
    f"日本語でお願いします。日本に住んでいます。{CANARY}",
    f"5年です。カフェ森で働いていました。{CANARY}",
]


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """The logger's own JSON output, extras included."""
    with captured_logs() as buffer:
        yield buffer


def test_every_tool_execution_is_logged_with_agent_session_and_tool_and_no_text() -> None:
    h = harness(OfflineModel(RESPONDERS))
    session = h.service.create("applicant-1", JOB)
    for line in LINES:
        h.service.post_message("applicant-1", session.session_id, line)

    info = [(message, context) for level, message, context in h.log.records if level == "info"]
    tools = [context for message, context in info if message == "tool executed"]
    assert tools and all({"agent", "sessionId", "tool", "status", "durationMs"} <= set(c) for c in tools)
    assert {"workflow started", "agent transition", "llm call", "message processed"} <= {m for m, _ in info}
    assert CANARY not in str(info)
    assert "こんにちは" not in str(info)


def test_through_powertools_at_info_no_applicant_text_reaches_the_log(captured: io.StringIO) -> None:
    model = OfflineModel(RESPONDERS)
    env = AgentEnv(model, InMemoryRunSteps(), PowertoolsInterviewLog(), SubAgents(model), sleep=lambda _: None)
    service = ConsentedOnCreate(InMemoryRepository(), Orchestrator(env))
    session = service.create("applicant-1", JOB)
    for line in LINES:
        service.post_message("applicant-1", session.session_id, line)
    logs = captured.getvalue()
    assert "tool executed" in logs and "message processed" in logs
    assert CANARY not in logs
