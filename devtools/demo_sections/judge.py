"""`make demo` section: the status judge (docs/judge.md).

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

from typing import Any

from devtools.fake_openai import Fault, Reply

RULES = [
    {"condition": "The review approves the change", "tag": "[REVIEW:1]"},
    {"condition": "The review requests fixes", "tag": "[REVIEW:2]"},
    {"condition": "Ask the user how to proceed", "interactiveOnly": True},
]
OUTPUT = (
    "Summary of the review. Last round I wrote [REVIEW:1], but the parser still drops the last fence "
    "and two tests fail. Fixes requested before merge."
)


def _clear_caches() -> None:
    from functions.status_judge import app

    app.dependencies.reset()


def run(ctx: Any) -> None:
    ctx.section(
        "Status judge: three stages, three provider strategies",
        "Which rule a step's output matches, asked 3 ways (structured output, tool call, prompt), and a fall-through.",
    )
    ctx.use_function("StatusJudgeFunction")
    _clear_caches()
    rows = []
    for strategy in ("json_schema", "tool", "prompted"):
        result = ctx.invoke(
            "StatusJudgeFunction", {"movement": "review", "rules": RULES, "output": OUTPUT, "strategy": strategy}
        )
        stages = ", ".join(f"{s['stage']}={s['status']}" for s in result["stages"])
        rows.append([strategy, result["ruleIndex"], result["method"], stages])
    ctx.table(["strategy", "ruleIndex", "method", "stages"], rows)
    ctx.line("rule 2 (interactive-only) is not a candidate in a non-interactive run")

    ctx.use_function("StatusJudgeFunction", ctx.openai_env())
    _clear_caches()
    ctx.fake_openai.enqueue(
        Fault(status=400, message="Invalid schema for response_format 'StepAnswer'"),
        Reply(content="Quoting the last round: [REVIEW:1]\nThis round: [REVIEW:2]"),
    )
    result = ctx.invoke("StatusJudgeFunction", {"movement": "review", "rules": RULES, "output": OUTPUT})
    ctx.line("through the openai client; the fake server rejects the stage-1 schema:")
    for stage in result["stages"]:
        error = f"  ({stage['error'][:70]}…)" if stage.get("error") else ""
        ctx.line(f"  {stage['stage']:<18} {stage['status']:<8}{error}".rstrip())
    ctx.line(f"-> ruleIndex {result['ruleIndex']} by {result['method']}: {result['reason']}")
    one = ctx.invoke("StatusJudgeFunction", {"movement": "review", "rules": RULES[:1], "output": OUTPUT})
    ctx.line(f"one candidate rule -> {one['method']} without an LLM call")
    ctx.use_function("StatusJudgeFunction", {"AI_AGENT_MODE": "mock"})
    _clear_caches()
