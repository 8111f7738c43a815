"""The replies a scripted model gives an interview's turns, as the fake server plays them: the
greeting, the Greeter's settings and the Architect's plan, a question ``ask`` sends once its
QuickCheck passes, the Reviewer's and the Auditor's verdicts (docs/interview.md#the-agents).

Written once because benchmarks, the demo and the tests play the same turns; each caller keeps
only what its turn says differently (the plan, the question, the facts).
"""

from __future__ import annotations

import json
from typing import Any

from .script import Reply

GREETING = "こんにちは！ご応募ありがとうございます。使用言語とお住まいの国を教えてください。"


def tool(name: str, **arguments: Any) -> Reply:
    """One tool call, its arguments as the model writes them (Japanese left unescaped)."""
    return Reply(tool_arguments=json.dumps(arguments, ensure_ascii=False), tool_name=name, finish_reason="tool_calls")


def verdict(**payload: Any) -> Reply:
    """A sub-agent's structured answer (QuickCheck, Reviewer, Auditor)."""
    return Reply(content=json.dumps(payload, ensure_ascii=False))


PASS_CHECK = verdict(passed=True, violations=None)
FAIL_CHECK = verdict(passed=False, violations=[{"type": "prohibited_topic", "message": "家族について"}])
PASS_REVIEW = verdict(passed=True, feedback=None, missing_facts=None)


def asked(question: str) -> list[Reply]:
    """``ask(question)`` and the QuickCheck it runs on it, passed."""
    return [tool("ask", message=question), PASS_CHECK]


def settings_and_plan(plan: list[dict[str, Any]], country: str = "日本") -> list[Reply]:
    """The Greeter's three settings (Japanese, ``country``, the time zone it implies), then the
    Architect's plan: what a second turn does before its first question."""
    return [
        tool("set_language", language="ja"),
        tool("set_country", country=country),
        tool("set_timezone", timezone=None),
        tool("create_plan", fields=plan),
    ]


def reviewed(facts: list[dict[str, str]]) -> list[Reply]:
    """The Interviewer hands ``facts`` to the Reviewer, which passes them."""
    return [tool("subtask", agent="reviewer", facts=facts), PASS_REVIEW]


def audited(summary: str) -> list[Reply]:
    """The Interviewer calls the Auditor after the last field; it passes with ``summary``."""
    return [tool("subtask", agent="auditor", facts=None), verdict(passed=True, violations=None, summary=summary)]
