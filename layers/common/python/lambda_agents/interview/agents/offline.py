"""Offline policy for AI_AGENT_MODE=mock: every interview agent played deterministically and
correctly, so the local runner, ``make demo`` and tests run a whole interview without a model.

Registered per ``purpose`` with the OfflineModel. The agents answer with tool calls (a
``ChatResponse``), read from the same system prompt a real model gets (its JSON state block)
and from the tool results of the running turn; the sub-agents answer their JSON schema:

- Greeter: greets and asks on the first turn; then sets the language from the applicant's
  script, the country it finds named in their message (or asks again), and the time zone.
- Architect: the job's fields, required ones first, otherwise in the job's order.
- Interviewer: ask (its QuickCheck runs in code), a gentler question after a failed check,
  reviewer after every answer (the facts are the applicant's answer, one per missing required
  fact), auditor after the last field.
- QuickCheck: fails a question that names a prohibited topic; Reviewer: an answer shorter than
  six characters satisfies nothing (a follow-up is asked); Auditor: passes unless an assistant
  message named a prohibited topic, and sums the facts up.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from ...japanese import has_japanese
from ...llm.offline_model import TextResponder
from ...llm.types import ChatRequest, ChatResponse, Message, ToolCall, Usage, estimate_tokens
from ..locales.residence import ALIASES, country_names
from .prompts import read_state_block

MIN_ANSWER_CHARS = 6
PROHIBITED_WORDS = (
    "年齢", "生年月日", "宗教", "本籍", "出身地", "出生地", "結婚", "妊娠", "家族", "支持政党", "労働組合",
    "age", "religion", "married", "pregnan", "birthplace", "political", "union member",
)  # fmt: skip


def prohibited_words_in(text: str) -> list[str]:
    """The prohibited words ``text`` uses; English ones as words ("language" is not about age)."""
    return [
        word
        for word in PROHIBITED_WORDS
        if (re.search(rf"\b{re.escape(word)}", text) if word.isascii() else word in text)
        and (not word.isascii() or word == "pregnan" or re.search(rf"\b{re.escape(word)}\b", text))
    ]


_LANGUAGE_NAME = re.compile(r"[\u30a0-\u30ff\u4e00-\u9fff]+語")


def _system_prompt(request: ChatRequest) -> str:
    first = request.messages[0] if request.messages else {}
    return str(first.get("content") or "") if first.get("role") == "system" else ""


def _latest_user_text(messages: list[Message]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


def _run_tool_results(messages: list[Message]) -> list[dict[str, Any]]:
    """The tool results of the running agent loop (after the applicant's latest message)."""
    results: list[dict[str, Any]] = []
    for message in reversed(messages):
        if message.get("role") == "user":
            break
        if message.get("role") == "tool":
            try:
                results.append(json.loads(str(message.get("content"))))
            except ValueError:
                continue
    results.reverse()
    return results


def _tool_response(request: ChatRequest, *calls: tuple[str, dict[str, Any]]) -> ChatResponse:
    base = len(request.messages)
    tool_calls = tuple(
        ToolCall(f"call_offline_{base}_{index}", name, json.dumps(arguments, ensure_ascii=False))
        for index, (name, arguments) in enumerate(calls)
    )
    prompt = estimate_tokens(json.dumps(request.messages, ensure_ascii=False))
    completion = sum(estimate_tokens(call.arguments) for call in tool_calls)
    return ChatResponse(
        None, "tool_calls", tool_calls=tool_calls, usage=Usage(prompt, completion), model="offline-mock"
    )


def find_country(text: str) -> str | None:
    """A country named in free text: Japanese names, aliases and English names (longest first)."""
    # Language names end in 語 and would read as their country (日本語 -> 日本): drop them first.
    folded = _LANGUAGE_NAME.sub(" ", unicodedata.normalize("NFKC", text)).casefold()
    candidates = {alias.casefold(): alias for alias in ALIASES}
    candidates.update({name.casefold(): name for name in country_names().values() if len(name) > 3})
    for key in sorted(candidates, key=len, reverse=True):
        if has_japanese(key):
            if key in folded:
                return candidates[key]
        elif len(key) > 3 and re.search(rf"(?<![a-z]){re.escape(key)}(?![a-z])", folded):
            return candidates[key]
    return None


def greeter(request: ChatRequest) -> ChatResponse:
    state = read_state_block(_system_prompt(request))
    text = _latest_user_text(request.messages)
    japanese = has_japanese(text)
    errors = [r for r in _run_tool_results(request.messages) if r.get("status") == "error"]
    if state.get("first_turn") or errors:
        message = (
            "こんにちは！ご応募ありがとうございます。はじめに、ご希望の言語とお住まいの国を教えてください。"
            if japanese
            else "Hello, and thank you for applying! First, which language would you like to use, "
            "and which country do you live in?"
        )
        return _tool_response(request, ("ask", {"message": message}))
    calls: list[tuple[str, dict[str, Any]]] = []
    if not state.get("language"):
        calls.append(("set_language", {"language": "ja" if japanese else "en"}))
    country = state.get("country") or find_country(text)
    if not state.get("country"):
        if country is None:
            ask = "お住まいの国を教えていただけますか？" if japanese else "Which country do you live in?"
            return _tool_response(request, *calls, ("ask", {"message": ask}))
        calls.append(("set_country", {"country": country}))
    if not state.get("timezone"):
        calls.append(("set_timezone", {"timezone": None}))
    return _tool_response(request, *calls)


def architect(request: ChatRequest) -> ChatResponse:
    fields = read_state_block(_system_prompt(request)).get("fields") or []
    ordered = sorted(fields, key=lambda field: not field.get("required"))
    return _tool_response(request, ("create_plan", {"fields": ordered}))


def _question(field: dict[str, Any], language: str | None) -> str:
    label = field.get("label", "")
    missing = field.get("missing_facts") or []
    if language == "ja":
        if missing:
            return f"ありがとうございます。{'、'.join(missing)}について、もう少し詳しく教えていただけますか？"
        return f"「{label}」について教えてください。"
    if missing:
        return f"Thank you. Could you tell me a little more about {', '.join(missing)}?"
    return f"Could you tell me about {label}?"


def interviewer(request: ChatRequest) -> ChatResponse:
    state = read_state_block(_system_prompt(request))
    field = state.get("current_field") or {}
    if state.get("all_fields_done"):
        return _tool_response(request, ("subtask", {"agent": "auditor", "facts": None}))
    if state.get("answer_needs_review"):
        answer = _latest_user_text(request.messages).strip()[:300] or "-"
        known = field.get("facts") or {}
        unanswered = [fact for fact in field.get("required_facts") or [] if fact not in known]
        names = field.get("missing_facts") or unanswered or [field.get("label", "answer")]
        facts = [{"name": name, "value": answer} for name in names]
        return _tool_response(request, ("subtask", {"agent": "reviewer", "facts": facts}))
    question = _question(field, state.get("language"))
    results = _run_tool_results(request.messages)
    if results and "QuickCheck failed" in str(results[-1].get("result", {}).get("message", "")):
        question = (
            "差し支えない範囲で、" if state.get("language") == "ja" else "If you are comfortable sharing: "
        ) + question
    return _tool_response(request, ("ask", {"message": question}))


def _section(text: str, title: str) -> str:
    match = re.search(rf"## {re.escape(title)}\n(.*?)(?:\n\n## |\Z)", text, re.DOTALL)
    return match.group(1) if match else ""


def quick_check(request: ChatRequest) -> str:
    text = str(request.messages[-1].get("content") or "")
    question = _section(text, "Question to check").casefold()
    hits = prohibited_words_in(question)
    if hits:
        violation = {"type": "prohibited_topic", "message": f"the question touches a prohibited topic ({hits[0]})"}
        return json.dumps({"passed": False, "violations": [violation]}, ensure_ascii=False)
    return json.dumps({"passed": True, "violations": None})


def reviewer(request: ChatRequest) -> str:
    text = str(request.messages[-1].get("content") or "")
    current = _section(text, "Current field")
    field_id = re.search(r"- field_id: (.+)", current)
    required = re.search(r"- required facts: (.+)", current)
    required_facts = [] if required is None or required.group(1) == "(none listed)" else required.group(1).split(", ")
    prefix = f"- {field_id.group(1)} / " if field_id else "- "
    collected = {
        line[len(prefix) :].split(": ", 1)[0]
        for line in _section(text, "Facts collected").splitlines()
        if line.startswith(prefix)
    }
    answers = [line for line in _section(text, "Conversation so far").splitlines() if line.startswith("Applicant: ")]
    latest = answers[-1].removeprefix("Applicant: ").strip() if answers else ""
    missing = [fact for fact in required_facts if fact not in collected]
    if len(latest) < MIN_ANSWER_CHARS:
        missing = required_facts or missing
        feedback = "The answer is too short to satisfy the field."
    else:
        feedback = "Some required facts are still missing." if missing else ""
    if missing or feedback:
        return json.dumps(
            {"passed": False, "feedback": feedback or None, "missing_facts": missing or None}, ensure_ascii=False
        )
    return json.dumps({"passed": True, "feedback": None, "missing_facts": None})


def auditor(request: ChatRequest) -> str:
    text = str(request.messages[-1].get("content") or "")
    said = [
        line.casefold() for line in _section(text, "Conversation so far").splitlines() if line.startswith("Assistant: ")
    ]
    hits = [word for line in said for word in prohibited_words_in(line)]
    facts = [
        line.removeprefix("- ") for line in _section(text, "Facts collected").splitlines() if line.startswith("- ")
    ]
    japanese = "Applicant's language: ja" in text
    if japanese:
        summary = "応募者の回答: " + ("、".join(facts) if facts else "なし")
    else:
        summary = "Applicant's answers: " + ("; ".join(facts) if facts else "none")
    violations = None
    if hits:
        message = f"an assistant message touched a prohibited topic ({hits[0]})"
        violations = [{"type": "prohibited_topic", "message": message, "severity": "error"}]
    return json.dumps({"passed": not hits, "violations": violations, "summary": summary[:3900]}, ensure_ascii=False)


RESPONDERS: dict[str, TextResponder] = {
    "interview.greeter": greeter,
    "interview.architect": architect,
    "interview.interviewer": interviewer,
    "interview.quick_check": quick_check,
    "interview.reviewer": reviewer,
    "interview.auditor": auditor,
}
