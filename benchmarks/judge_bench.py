"""The judge's JSON in free text (``lambda_agents.llm.json_extraction.extract_json``) against a naive
first-brace / last-brace ``json.loads`` on the same messy answers: success rate (the intended
object recovered) and time per KB; then time on adversarial inputs at growing sizes, which must
grow linearly (the ratio per doubling stays near 2)."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

from lambda_agents.llm.json_extraction import extract_json

from benchmarks.command_line import benchmark_arguments

ANSWER = {"step": 2, "reason": "fixes requested"}
A = json.dumps(ANSWER)
QUOTED = json.dumps({"step": 1, "reason": "quoted from the last round"})
CORPUS: list[tuple[str, str]] = [
    ("bare object", A),
    ("object in prose", f"My verdict follows.\n{A}\nThanks."),
    ("json fence", f"Here you go:\n```json\n{A}\n```"),
    ("unlabelled fence", f"```\n{A}\n```\nDone."),
    ("quoted earlier object, answer last", f"Last round you said {QUOTED}. Now: {A}"),
    ("two concatenated objects", QUOTED + A),
    ("example fence then answer fence", f"Example:\n```json\n{QUOTED}\n```\nAnswer:\n```json\n{A}\n```"),
    ("braces in prose around the object", f"Rules {{1}} and {{2}} were checked; result: {A} (see {{notes}})."),
    ("top-level array, answer last", json.dumps([json.loads(QUOTED), ANSWER])),
    ("trailing prose with a brace", f"{A}\nNote: the set {{a, b}} is unused."),
    ("pretty-printed in prose", "Result:\n" + json.dumps(ANSWER, indent=2) + "\nEnd."),
    ("CRLF fence", f"```json\r\n{A}\r\n```"),
]


def naive(text: str) -> Any:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        return json.loads(text[start : end + 1])
    except ValueError:
        return None


def recovered(value: Any) -> bool:
    if isinstance(value, list):
        value = value[-1] if value else None
    return value == ANSWER


def per_kb_us(parse: Any, texts: list[str], rounds: int = 200) -> float:
    size_kb = sum(len(t.encode()) for t in texts) / 1024
    started = time.perf_counter()
    for _ in range(rounds):
        for text in texts:
            parse(text)
    return (time.perf_counter() - started) / rounds / size_kb * 1e6


def main() -> None:
    texts = [text for _, text in CORPUS]
    ours = sum(recovered(extract_json(t)) for t in texts)
    theirs = sum(recovered(naive(t)) for t in texts)
    print(f"messy-answer corpus: {len(texts)} answers")
    print(f"{'parser':<32}{'recovered':>10}{'rate':>8}{'us per KB':>12}")
    print(
        f"{'extract_json (this product)':<32}{ours:>10}{ours / len(texts):>8.0%}{per_kb_us(extract_json, texts):>12.1f}"
    )
    print(f"{'naive first { .. last }':<32}{theirs:>10}{theirs / len(texts):>8.0%}{per_kb_us(naive, texts):>12.1f}")
    missed = [name for name, text in CORPUS if not recovered(naive(text))]
    print(f"naive misses: {', '.join(missed)}")
    print("\nadversarial inputs (seconds per parse; linear growth keeps the x2 ratio near 2):")
    print(f"{'input':<26}" + "".join(f"{size // 1024:>9} KB" for size in (16_384, 32_768, 65_536, 131_072)))
    for name, unit in (("backticks", "`"), ("open braces", "{"), ("fence openers", "```\n{"), ("quotes", '{"a": "')):
        row = []
        for size in (16_384, 32_768, 65_536, 131_072):
            text = (unit * (size // len(unit) + 1))[:size]
            started = time.perf_counter()
            for _ in range(5):
                extract_json(text)
            row.append((time.perf_counter() - started) / 5)
        ratios = " ".join(f"x{later / max(earlier, 1e-9):.1f}" for earlier, later in itertools.pairwise(row))
        print(f"{name:<26}" + "".join(f"{seconds * 1000:>9.2f}ms" for seconds in row) + f"   {ratios}")


if __name__ == "__main__":
    benchmark_arguments(__file__, __doc__)
    main()
