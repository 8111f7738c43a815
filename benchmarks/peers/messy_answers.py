"""The status judge's messy-answer corpus (the peer benchmark's second table): model answers that carry the
verdict object somewhere in free text, as judges really write them. Stand-alone (stdlib only)
so the peer scripts can import it in their own venvs.

How it works, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

VERDICT = {"status": "approved", "rule": 2, "reason": "All review findings are fixed; tests pass."}
EARLIER = {"status": "needs_fix", "rule": 1, "reason": "Missing tests for the error path."}
ARRAY = [{"id": 1, "ok": True}, {"id": 2, "ok": False}]
NESTED = {"status": "approved", "rule": 3, "reason": "Keep {braces} and } in strings", "notes": {"a": [1, {"b": "}"}]}}


def _big_answer() -> dict[str, Any]:
    findings = [{"file": f"src/module_{i}.py", "line": i, "note": "checked " * 10} for i in range(600)]
    return {**VERDICT, "findings": findings}


BIG = _big_answer()
_PROSE = "The reviewer walked through every change and compared it with the plan. " * 40


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    expected: Any  # None: no complete answer in the text


def _j(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


CASES: tuple[Case, ...] = (
    Case("bare JSON", _j(VERDICT), VERDICT),
    Case("prose around JSON", f"Here is my verdict:\n{_j(VERDICT)}\nLet me know if you need more.", VERDICT),
    Case("json fence", f"Result:\n```json\n{_j(VERDICT)}\n```\nDone.", VERDICT),
    Case("bare fence, CRLF", f"Result:\r\n```\r\n{_j(VERDICT)}\r\n```\r\n", VERDICT),
    Case("pretty-printed in fence", f"```json\n{json.dumps(VERDICT, indent=2)}\n```", VERDICT),
    Case("two concatenated objects, last wins", _j(EARLIER) + _j(VERDICT), VERDICT),
    Case("concatenated with newline", _j(EARLIER) + "\n" + _j(VERDICT), VERDICT),
    Case(
        "quoted earlier verdict, then answer",
        f"The previous reviewer answered {_j(EARLIER)}, but that is outdated.\nMy verdict: {_j(VERDICT)}",
        VERDICT,
    ),
    Case(
        "example fence, then answer fence",
        f"Format:\n```json\n{_j(EARLIER)}\n```\nAnswer:\n```json\n{_j(VERDICT)}\n```",
        VERDICT,
    ),
    Case("trailing text with braces", f"{_j(VERDICT)}\nNote: see {{the plan}} for details.", VERDICT),
    Case("braces inside strings", f"Verdict follows. {_j(NESTED)} End.", NESTED),
    Case("array answer", f"Items:\n{_j(ARRAY)}", ARRAY),
    Case("truncated answer", f"My verdict: {_j(VERDICT)[:40]}", None),
    Case("quoted verdict, answer truncated", f"Earlier: {_j(EARLIER)}\nMine: {_j(VERDICT)[:40]}", None),
    Case("no JSON at all", "I could not decide; please ask again.", None),
    Case("huge prose, answer last (~120 KB)", _PROSE * 40 + "\nVerdict: " + _j(VERDICT), VERDICT),
    Case("huge answer in a fence (~90 KB)", f"Full report:\n```json\n{_j(BIG)}\n```\n", BIG),
)


def measure(parse: Callable[[str], Any], repeat: int) -> list[dict[str, Any]]:
    """Per case: what ``parse`` recovered (None on any exception) and its mean time per call."""
    outcomes = []
    for case in CASES:
        try:
            value = parse(case.text)
        except Exception:  # a helper that raises recovered nothing
            value = None
        started = time.perf_counter()
        for _ in range(repeat):
            try:
                parse(case.text)
            except Exception:
                continue
        outcomes.append({"name": case.name, "value": value, "seconds": (time.perf_counter() - started) / repeat})
    return outcomes


def naive_first_last_brace(text: str) -> Any:
    """The baseline many agents ship: json.loads(text[first '{' : last '}'])."""
    return json.loads(text[text.find("{") : text.rfind("}") + 1])
