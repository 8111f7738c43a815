"""Which field the Interviewer works on: the system decides, never the model, and a field advances
only after a Reviewer pass (docs/interview.md#fields, docs/interview.md#invariants).

The current field is the first field of the plan that is not settled (done, or skipped by the
applicant). It changes only when the current one is settled, which only a Reviewer pass or the
applicant's skip does (``state_changes.RecordReview`` / ``SkipField``).
"""

from __future__ import annotations

from .models import FieldStatus, InterviewState
from .state_changes import SetCurrentField, SetFieldStatus, StateChange


def next_field_id(state: InterviewState) -> str | None:
    for field_id in state.plan:
        if not state.fields[field_id].status.settled:
            return field_id
    return None


def advance_field(state: InterviewState) -> list[StateChange]:
    """The changes that put the next unfinished field under interview (none when nothing moves)."""
    current = state.current_field_id
    if current is not None and not state.fields[current].status.settled:
        return []
    upcoming = next_field_id(state)
    if upcoming is None:
        return [SetCurrentField(None)] if current is not None else []
    changes: list[StateChange] = [SetCurrentField(upcoming)]
    if state.fields[upcoming].status is FieldStatus.PENDING:
        changes.append(SetFieldStatus(upcoming, FieldStatus.INTERVIEWING))
    return changes
