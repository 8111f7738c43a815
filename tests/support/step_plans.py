"""Step plans of a process template as its API and the chat's drafts write them (``stepTemplates``):
the plain chain, where the first step is timed from the goal and every other one follows the step
before it and depends on it alone."""

from __future__ import annotations

from typing import Any


def chained_steps(*names: str, goal_offset_days: int, after_previous_days: int) -> list[dict[str, Any]]:
    """One step per name, in order (seq from 1): the first ``goal_offset_days`` from the goal
    (negative: before it), each next one ``after_previous_days`` after the one before."""
    return [
        {
            "seq": seq,
            "name": name,
            "basis": "goal" if seq == 1 else "prev",
            "offsetDays": goal_offset_days if seq == 1 else after_previous_days,
            "requiredArtifacts": None,
            "dependsOn": [] if seq == 1 else [seq - 1],
        }
        for seq, name in enumerate(names, start=1)
    ]
