"""Transform functions (docs/engine.md#transforms): tool inputs and sub-agent outputs -> the stored types.

Nullable inputs become their empty value ('' or []), texts are trimmed, and nothing the model
sent beyond what is stored survives the transform.
"""

from __future__ import annotations

from ..rules.models import AuditRecord, AuditViolation
from ..rules.state_changes import RecordReview
from .reviewers import AuditResult, ReviewResult
from .tool_inputs import FactInput


def transform_to_facts(facts: list[FactInput] | None) -> tuple[tuple[str, str], ...]:
    """Facts as (name, value) pairs; a name given twice keeps its last value."""
    merged: dict[str, str] = {}
    for fact in facts or []:
        merged[fact.name] = fact.value
    return tuple(merged.items())


def transform_to_review(field_id: str, review: ReviewResult) -> RecordReview:
    return RecordReview(
        field_id=field_id,
        passed=review.passed,
        feedback=(review.feedback or "").strip(),
        missing_facts=tuple(fact.strip() for fact in review.missing_facts or [] if fact.strip()),
    )


def transform_to_audit_record(audit: AuditResult) -> AuditRecord:
    return AuditRecord(
        passed=audit.passed,
        violations=[
            AuditViolation(
                type=violation.type.strip() or "unspecified", message=violation.message, severity=violation.severity
            )
            for violation in audit.violations or []
        ],
        summary=audit.summary.strip(),
    )
