"""Offline answers for AI_AGENT_MODE=mock: a deterministic keyword judge, so the local runner and
the demo judge meaningfully without a model. It picks the candidate whose tag or condition words
occur most in the agent's output; words every condition shares do not count (ties: the lower number).
Its reason names the rule by its condition, as the instructions ask a model to, never by its number:
the answer's one numbering is ``ruleIndex``."""

from __future__ import annotations

import json
import re

from ..llm.offline_model import TextResponder
from ..llm.types import ChatRequest

_OUTPUT = re.compile(r"<agent_output>\n(.*)\n</agent_output>", re.DOTALL)
_RULE_LINE = re.compile(r"^(?:\| (\d+) \| (.+) \||- \[[^\]:]+:(\d+)\] (.+)|(\d+)\. (.+))$", re.MULTILINE)
_WORD = re.compile(r"[\w\u3040-\u30ff\u4e00-\u9fff]{3,}")


def _pick(request: ChatRequest) -> tuple[int, str]:
    text = "\n".join(str(m.get("content", "")) for m in request.messages)
    match = _OUTPUT.search(text)
    output = (match.group(1) if match else "").lower()
    rules: dict[int, str] = {}
    for found in _RULE_LINE.finditer(text):
        number = found.group(1) or found.group(3) or found.group(5)
        condition = found.group(2) or found.group(4) or found.group(6)
        rules.setdefault(int(number), condition)
    if not rules:
        return 1, "no rules listed"
    words = {n: {w.lower() for w in _WORD.findall(c)} for n, c in rules.items()}
    shared = set.intersection(*words.values()) if len(words) > 1 else set()
    output_words = _WORD.findall(output)
    scores = {n: sum(output_words.count(w) for w in words[n] - shared) for n in rules}
    best = min(rules, key=lambda n: (-scores[n], n))
    condition = rules[best] if len(rules[best]) <= 60 else f"{rules[best][:57]}..."
    return best, f"the words of the condition '{condition}' occur {scores[best]} time(s) in the output"


def structured_answer(request: ChatRequest) -> str:
    number, reason = _pick(request)
    return json.dumps({"step": number, "reason": reason})


def evaluation_answer(request: ChatRequest) -> str:
    number, reason = _pick(request)
    return json.dumps({"matched_index": number, "reason": reason})


def tag_answer(request: ChatRequest) -> str:
    number, _ = _pick(request)
    system = str(request.messages[0].get("content", "")) if request.messages else ""
    named = re.search(r"\[([^\]:]+):\d+\]", system)
    name = "JUDGE" if "impartial judge" in system or named is None else named.group(1)
    return f"[{name}:{number}]"


RESPONDERS: dict[str, TextResponder] = {
    "judge.structured": structured_answer,
    "judge.evaluate": evaluation_answer,
    "judge.tag": tag_answer,
}
