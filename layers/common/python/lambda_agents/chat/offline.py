"""The offline chat answer behind ``AI_AGENT_MODE=mock`` (docs/chat-and-templates.md#mock-and-openai-modes): a
deterministic Japanese answer ending in a valid ``ai_chat_process_template.v1`` fence, derived
from the session context in the system prompt and the user's latest message, so the local runner
and ``make demo`` chat meaningfully without a model.

The steps come from the first keyword group found in the process type, goal or message (hiring,
audit / closing, events, product releases; a generic plan otherwise); "面接を2回" splits the
interview step in two. Context fields left unset are listed in ``missing_information``.
"""

from __future__ import annotations

import json
import re

from ..llm.offline_model import TextResponder
from ..llm.types import ChatRequest
from .conversation import PURPOSE
from .draft_schema import SCHEMA_ID
from .prompt import CONTEXT_CLOSE, CONTEXT_LABELS, CONTEXT_OPEN, UNSET

_PLANS: tuple[tuple[tuple[str, ...], list[str]], ...] = (
    (("採用", "求人", "面接"), ["求人票の作成", "書類選考", "面接", "内定通知", "入社手続き"]),
    (("監査", "決算", "経理"), ["資料の収集", "仕訳の確認", "監査法人との調整", "決算書の作成", "承認"]),
    (("イベント", "展示会", "セミナー"), ["企画書の作成", "会場の手配", "集客", "当日運営", "振り返り"]),
    (("リリース", "開発", "製品"), ["要件定義", "設計", "実装", "テスト", "リリース判定"]),
)
_GENERIC = ["要件の整理", "計画の作成", "準備", "実施", "振り返り"]
_TWO_INTERVIEWS = re.compile(r"面接[^。\n]{0,10}(2|２|二)回")
_ARTIFACTS = {
    "求人票の作成": ("求人票", "職務内容と応募条件"),
    "面接": ("面接評価シート", None),
    "決算書の作成": ("決算書", None),
    "企画書の作成": ("企画書", "目的・対象・予算"),
    "要件定義": ("要件定義書", None),
}


def _context(system_prompt: str) -> dict[str, str | None]:
    start, end = system_prompt.find(CONTEXT_OPEN), system_prompt.find(CONTEXT_CLOSE)
    block = system_prompt[start:end] if 0 <= start < end else ""
    values: dict[str, str | None] = {}
    for attribute, label in CONTEXT_LABELS:
        match = re.search(rf"^- {re.escape(label)}: (.*)$", block, re.MULTILINE)
        value = match.group(1).strip() if match else None
        values[attribute] = None if value in (None, "", UNSET) else value
    return values


def _steps(context: dict[str, str | None], message: str) -> list[str]:
    text = " ".join(v for v in (context["process_type"], context["goal"], message) if v)
    steps = next((plan for words, plan in _PLANS if any(word in text for word in words)), _GENERIC)
    if "面接" in steps and _TWO_INTERVIEWS.search(message):
        index = steps.index("面接")
        steps = [*steps[:index], "一次面接", "二次面接", *steps[index + 1 :]]
    return list(steps)


def chat_answer(request: ChatRequest) -> str:
    system = next((str(m.get("content", "")) for m in request.messages if m.get("role") == "system"), "")
    message = next((str(m.get("content", "")) for m in reversed(request.messages) if m.get("role") == "user"), "")
    context = _context(system)
    names = _steps(context, message)
    subject = context["process_type"] or context["goal"] or "業務"
    offset = -7 * len(names)
    steps = []
    for index, name in enumerate(names, start=1):
        artifact = _ARTIFACTS.get(name)
        steps.append(
            {
                "seq": index,
                "name": name,
                "basis": "goal" if index == 1 else "prev",
                "offsetDays": offset if index == 1 else 7,
                "requiredArtifacts": None if artifact is None else [{"kind": artifact[0], "description": artifact[1]}],
                "dependsOn": [] if index == 1 else [index - 1],
            }
        )
    missing = [label for attribute, label in CONTEXT_LABELS[:4] if not context[attribute]]
    payload = {
        "schema": SCHEMA_ID,
        "answer": f"{subject}の工程案を{len(steps)}ステップで作成しました。",
        "missing_information": missing or None,
        "process_template_draft": {"name": f"{subject}のプロセス", "stepTemplates": steps},
    }
    lines = [f"{subject}について、目標から逆算した工程案をまとめました。"]
    goal = context["goal"]
    if goal:
        lines.append(f"目標「{goal}」の{-offset}日前に着手し、各工程をおおむね1週間ずつ進める想定です。")
    lines += [f"{index}. {name}" for index, name in enumerate(names, start=1)]
    if missing:
        lines.append(f"より正確な案にするため、{'・'.join(missing)}を教えてください。")
    fence = json.dumps(payload, ensure_ascii=False, indent=2)
    return "\n".join(lines) + f"\n\n```json\n{fence}\n```"


RESPONDERS: dict[str, TextResponder] = {PURPOSE: chat_answer}
