"""The Architect's plan checked against the job's fields (docs/interview.md#the-plan).

Decisions (docs/interview.md#the-plan):
- the plan must list every field of the job exactly once: an unknown id, a missing id or a
  duplicate is an error the Architect gets back (all problems in one message) to correct;
- only the ORDER comes from the model: what each field is (label, intent, required, facts,
  done criteria) stays the job's, so a model can never make a required field optional or
  rewrite what a field asks for. A label or flag that differs is not an error, it is ignored;
- ids are compared exactly (after trimming): ids are machine names, and guessing which field a
  misspelt id meant could silently reorder or drop one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .models import JobDefinition


class PlanInvalid(ValueError):
    """The plan does not list the job's fields exactly once each; the message says how."""


def validate_plan(field_ids: Sequence[str], job: JobDefinition) -> list[str]:
    """The plan's field ids in interview order, or ``PlanInvalid`` naming every problem."""
    ids = [field_id.strip() for field_id in field_ids]
    known = set(job.field_ids)
    problems = []
    unknown = sorted({field_id for field_id in ids if field_id not in known})
    if unknown:
        problems.append(f"unknown field ids: {', '.join(unknown)}")
    missing = [field_id for field_id in job.field_ids if field_id not in ids]
    if missing:
        problems.append(f"missing field ids: {', '.join(missing)}")
    duplicates = sorted(field_id for field_id, count in Counter(ids).items() if count > 1)
    if duplicates:
        problems.append(f"listed more than once: {', '.join(duplicates)}")
    if problems:
        raise PlanInvalid(
            "the plan must list every field of the job exactly once ("
            + "; ".join(problems)
            + f"); the job's fields are: {', '.join(job.field_ids)}"
        )
    return ids
