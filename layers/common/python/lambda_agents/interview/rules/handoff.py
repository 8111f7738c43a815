"""The handoff summary a sub-session receives (docs/interview.md#handoff):
the conversation so far, the current field, the facts collected.

"The conversation so far" is the most recent part of the transcript that fits a token budget (the
bundle's estimate, ``estimate_tokens``: utf-8 bytes / 4), with a line saying how many earlier
messages were left out: deterministic, free, and never longer than the budget. Sub-agents never see
the Interviewer's tool calls, only what the applicant and the assistant said.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...llm.types import estimate_tokens
from .models import FieldDefinition, InterviewState, JobDefinition

Transcript = Sequence[tuple[str, str]]  # (role, content), oldest first
DEFAULT_BUDGET_TOKENS = 3000
_SPEAKERS = {"user": "Applicant", "assistant": "Assistant"}


def conversation_excerpt(transcript: Transcript, budget_tokens: int = DEFAULT_BUDGET_TOKENS) -> str:
    lines: list[str] = []
    used = 0
    for role, content in reversed(transcript):
        line = f"{_SPEAKERS.get(role, role)}: {content}"
        cost = estimate_tokens(line) + 1
        if used + cost > budget_tokens:
            break
        lines.append(line)
        used += cost
    lines.reverse()
    left_out = len(transcript) - len(lines)
    if left_out:
        lines.insert(0, f"({left_out} earlier message(s) not shown)")
    return "\n".join(lines) if lines else "(no messages yet)"


def field_block(field: FieldDefinition) -> str:
    facts = ", ".join(field.required_facts) or "(none listed)"
    return "\n".join(
        [
            f"- field_id: {field.field_id}",
            f"- label: {field.label}",
            f"- intent: {field.intent}",
            f"- required: {'yes' if field.required else 'no'}",
            f"- required facts: {facts}",
            f"- done criteria: {field.done_criteria}",
        ]
    )


def facts_block(state: InterviewState, job: JobDefinition, only: str | None = None) -> str:
    lines = []
    for field_id in state.plan or job.field_ids:  # interview order once the plan exists
        if only is not None and field_id != only:
            continue
        for name, value in state.fields[field_id].facts.items():
            lines.append(f"- {field_id} / {name}: {value}")
    return "\n".join(lines) if lines else "(none yet)"


def handoff_summary(
    transcript: Transcript,
    state: InterviewState,
    job: JobDefinition,
    field_id: str | None,
    budget_tokens: int = DEFAULT_BUDGET_TOKENS,
) -> str:
    """The text a Reviewer / QuickCheck / Auditor sub-session starts from."""
    parts = ["## Conversation so far", conversation_excerpt(transcript, budget_tokens)]
    if field_id is not None:
        parts += ["", "## Current field", field_block(job.field(field_id))]
    else:
        parts += ["", "## Fields", "\n\n".join(field_block(field) for field in job.fields)]
    parts += ["", "## Facts collected", facts_block(state, job)]
    if state.language:
        parts += ["", f"Applicant's language: {state.language}"]
    return "\n".join(parts)
