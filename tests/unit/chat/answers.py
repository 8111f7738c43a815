"""Real-looking chat answers for the parser and use-case tests."""

from __future__ import annotations

import json
from typing import Any

SCHEMA = "ai_chat_process_template.v1"


def step(seq: int, *, basis: str | None = None, offset: int = 7, depends: list[int] | None = None) -> dict[str, Any]:
    return {
        "seq": seq,
        "name": f"工程{seq}",
        "basis": basis or ("goal" if seq == 1 else "prev"),
        "offsetDays": -30 if seq == 1 and offset == 7 else offset,
        "requiredArtifacts": None,
        "dependsOn": [] if seq == 1 else ([seq - 1] if depends is None else depends),
    }


def payload(steps: int = 3, **overrides: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "schema": SCHEMA,
        "answer": "採用プロセスの案です。",
        "missing_information": None,
        "process_template_draft": {"name": "中途採用", "stepTemplates": [step(i) for i in range(1, steps + 1)]},
    }
    value.update(overrides)
    return value


def fenced(value: Any, label: str = "json") -> str:
    body = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)
    return f"```{label}\n{body}\n```"


def answer(value: Any = None, *, prose: str = "中途採用の工程案をまとめました。", label: str = "json") -> str:
    return f"{prose}\n\n{fenced(payload() if value is None else value, label)}"
