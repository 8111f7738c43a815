"""The API's answers (issue 6 "API and state"), shaped from stored types.

Top-level keys are camelCase like the rest of the bundle's API; a field's own keys keep the
snake_case of the field definitions the client sent (``field_id``), as the spec writes them.
The audit is shown once the interview has finished, never while it runs.
"""

from __future__ import annotations

from typing import Any

from .models import InterviewSession
from .repository import StoredInterview
from .service import TurnResult


def created_view(session: InterviewSession) -> dict[str, Any]:
    return {
        "sessionId": session.session_id,
        "jobId": session.job.job_id,
        "status": session.state.status.value,
        "currentAgent": session.state.current_agent.value if session.state.current_agent else None,
        "version": session.version,
    }


def turn_view(result: TurnResult) -> dict[str, Any]:
    state = result.session.state
    return {
        "sessionId": result.session.session_id,
        "reply": result.outcome.reply,
        "replyKind": result.outcome.reply_kind,
        "awaitingUserResponse": result.outcome.awaiting_user_response,
        "currentAgent": state.current_agent.value if state.current_agent else None,
        "currentFieldId": state.current_field_id,
        "status": state.status.value,
        "fieldStatuses": state.field_statuses(),
        "usage": result.outcome.usage.as_dict(),
        "version": result.session.version,
    }


def session_view(stored: StoredInterview) -> dict[str, Any]:
    session = stored.session
    state = session.state
    order = state.plan or session.job.field_ids
    fields = []
    for field_id in order:
        definition = session.job.field(field_id)
        progress = state.fields[field_id]
        fields.append(
            {
                "field_id": field_id,
                "label": definition.label,
                "required": definition.required,
                "status": progress.status.value,
                "facts": dict(progress.facts),
                "missing_facts": list(progress.missing_facts),
            }
        )
    return {
        "sessionId": session.session_id,
        "jobId": session.job.job_id,
        "status": state.status.value,
        "currentAgent": state.current_agent.value if state.current_agent else None,
        "currentFieldId": state.current_field_id,
        "state": {"language": state.language, "country": state.country, "timezone": state.timezone},
        "plan": list(state.plan),
        "fields": fields,
        "collectedFacts": state.collected_facts(),
        "audit": state.audit.model_dump(mode="json") if state.finished and state.audit else None,
        "messages": [
            {"role": message.role, "content": message.content, "agent": message.agent, "createdAt": message.created_at}
            for message in stored.messages
        ],
        "usageTotal": dict(session.usage_total),
        "version": session.version,
        "createdAt": session.created_at,
        "updatedAt": session.updated_at,
    }
