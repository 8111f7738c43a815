"""The job and the in-memory interview repository the interview benchmarks run on
(interview_bench and its section 5 in interview_live)."""

from __future__ import annotations

from typing import Any

from lambda_agents.interview.repository import StoredInterview, TurnCommit, Withdrawal
from lambda_agents.interview.rules.models import JobDefinition

JOB = JobDefinition.model_validate(
    {
        "job_id": "bench",
        "fields": [
            {
                "field_id": "experience",
                "label": "バリスタ経験",
                "intent": "How long and where",
                "required": True,
                "required_facts": ["経験年数", "勤務先"],
                "done_criteria": "years and a workplace",
            },
            {
                "field_id": "motivation",
                "label": "志望動機",
                "intent": "Why this job",
                "required": True,
                "required_facts": ["理由"],
                "done_criteria": "a concrete reason",
            },
            {
                "field_id": "hobby",
                "label": "趣味",
                "intent": "Small talk",
                "required": False,
                "required_facts": [],
                "done_criteria": "any answer",
            },
        ],
    }
)


class MemoryRepository:
    """Interviews kept in a dict: the service's repository port without DynamoDB."""

    def __init__(self) -> None:
        self.stored: dict[str, StoredInterview] = {}

    def create(self, session: Any) -> None:
        self.stored[session.session_id] = StoredInterview(session, [])

    def load(self, session_id: str) -> StoredInterview | None:
        return self.stored.get(session_id)

    def commit_turn(self, commit: TurnCommit) -> None:
        current = self.stored[commit.session.session_id]
        self.stored[commit.session.session_id] = StoredInterview(commit.session, [*current.messages, *commit.messages])

    def withdraw(self, session_id: str, user_id: str, event: Any) -> Withdrawal:
        return Withdrawal(found=self.stored.pop(session_id, None) is not None)
