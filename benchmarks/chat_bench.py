"""LLMOutputParser (docs/chat-and-templates.md#which-fence-is-parsed) throughput and its cost on adversarial answers.

How it runs, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from typing import Any

from lambda_agents.chat.output_parser import MAX_FENCE_BYTES, LLMOutputParser, compose_content

from benchmarks.command_line import benchmark_arguments

PARSER = LLMOutputParser()
SIZES = (16_384, 32_768, 65_536, 131_072, 262_144)


def _draft(steps: int, description_chars: int) -> dict[str, Any]:
    return {
        "schema": "ai_chat_process_template.v1",
        "answer": "中途採用の工程案を作成しました。目標日から逆算しています。",
        "missing_information": ["地域", "予算"],
        "process_template_draft": {
            "name": "エンジニア中途採用",
            "stepTemplates": [
                {
                    "seq": seq,
                    "name": f"工程{seq}: 関係者との調整と確認",
                    "basis": "goal" if seq == 1 else "prev",
                    "offsetDays": -60 if seq == 1 else 3,
                    "requiredArtifacts": [
                        {"kind": "議事録", "description": "説明" * (description_chars // 2)},
                        {"kind": "チェックリスト", "description": None},
                    ],
                    "dependsOn": [] if seq == 1 else sorted({seq - 1, max(1, seq - 3)}),
                }
                for seq in range(1, steps + 1)
            ],
        },
    }


def realistic_answer(target_bytes: int) -> tuple[str, str]:
    """(the whole answer, its fence body): Japanese prose, an example fence, the answer fence."""
    prose = "ご相談の内容をもとに、採用プロセスの工程案をまとめました。\n"
    prose += "各工程の期限は目標日から逆算しています。\n" * 8
    example = '```json\n{"schema": "ai_chat_process_template.v1", "answer": "例"}\n```\n'
    steps, body = 1, ""
    while True:
        candidate = json.dumps(_draft(steps + 1, 180), ensure_ascii=False, indent=2)
        if len(candidate.encode()) > target_bytes:
            break
        steps, body = steps + 1, candidate
        if steps >= 50:
            break
    return f"{prose}\n例:\n{example}\n回答:\n```json\n{body}\n```\n以上です。", body


def _per_call_us(function: Callable[[], Any], batch_s: float = 0.05, batches: int = 5) -> float:
    """The best of ``batches`` timed batches (each at least ``batch_s``): noise only adds time."""
    best = float("inf")
    for _ in range(batches):
        calls, started = 0, time.perf_counter()
        while True:
            function()
            calls += 1
            elapsed = time.perf_counter() - started
            if elapsed >= batch_s:
                break
        best = min(best, elapsed / calls)
    return best * 1e6


def _parse_and_compose(text: str) -> str:
    return compose_content(text, PARSER.extract_template_json(text))


def throughput() -> None:
    print(f"throughput on real-looking answers (fence cap {MAX_FENCE_BYTES // 1024} KB):")
    print(f"{'answer':<16}{'fence KB':>9}{'parser us':>11}{'+compose us':>13}{'json.loads us':>15}{'ratio':>7}")
    for target in (8 * 1024, 16 * 1024, 31 * 1024):
        text, body = realistic_answer(target)
        result = PARSER.extract_template_json(text)
        assert result.ok, result.errors
        parser_us = _per_call_us(lambda text=text: PARSER.extract_template_json(text))  # type: ignore[misc]
        compose_us = _per_call_us(lambda text=text: _parse_and_compose(text))  # type: ignore[misc]
        loads_us = _per_call_us(lambda body=body: json.loads(body))  # type: ignore[misc]
        steps = len(result.data.process_template_draft.step_templates)  # type: ignore[union-attr]
        label = f"{steps} steps"
        print(
            f"{label:<16}{len(body.encode()) / 1024:>9.1f}{parser_us:>11.0f}{compose_us:>13.0f}"
            f"{loads_us:>15.0f}{parser_us / loads_us:>6.1f}x"
        )


ADVERSARIAL: tuple[tuple[str, Callable[[int], str]], ...] = (
    ("backticks", lambda n: "`" * n),
    ("backtick lines", lambda n: ("`" * 97 + "\n") * (n // 98)),
    ("open braces", lambda n: "{" * n),
    ("fence openers", lambda n: "```\n" * (n // 4)),
    ("json fence of braces", lambda n: "```json\n" + "{" * n + "\n```"),
    ("json fence of brackets", lambda n: "```json\n" + "[" * n + "\n```"),
    ("json fence of quotes", lambda n: '```json\n{"a": "' + '\\"' * (n // 2) + "\n```"),
    ("unclosed fence, prose", lambda n: "```json\n" + "工程 " * (n // 7)),
)


def adversarial() -> None:
    print("\nadversarial answers: time per KB at doubling sizes (flat = linear), and the x2 ratios")
    print(f"{'input':<24}" + "".join(f"{size // 1024:>8} KB" for size in SIZES) + "   per doubling")
    for name, build in ADVERSARIAL:
        seconds = []
        for size in SIZES:
            text = build(size)
            seconds.append(_per_call_us(lambda text=text: _parse_and_compose(text)) / 1e6)  # type: ignore[misc]
        per_kb = "".join(f"{s / (size / 1024) * 1e6:>8.1f}us" for s, size in zip(seconds, SIZES, strict=True))
        ratios = " ".join(f"x{later / max(earlier, 1e-9):.1f}" for earlier, later in itertools.pairwise(seconds))
        print(f"{name:<24}{per_kb}   {ratios}")


def main() -> None:
    throughput()
    adversarial()


if __name__ == "__main__":
    benchmark_arguments(__file__, __doc__)
    main()
