"""The notice an applicant accepts before the first question: what is collected, who reads it,
how long it is kept, and how to withdraw.

It is derived, never stored: from the job version the interview started from and the bundle's
retention settings. Its ``notice_id`` is a hash of its content, so a consent names exactly the
text the applicant was shown; if a setting changes between the two (a redeploy), the consent is
refused and the client shows the new notice.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from ..rules.models import JobDefinition

DEFAULT_INTERVIEW_DAYS = 90
DEFAULT_RUN_STEP_DAYS = 7


@dataclass(frozen=True)
class Retention:
    """How long an interview's items and its RunSteps (tool-call audit records) are kept."""

    interview_days: int = DEFAULT_INTERVIEW_DAYS
    run_step_days: int = DEFAULT_RUN_STEP_DAYS


class NoticeField(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    field_id: str
    label: str
    required: bool


class Notice(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    notice_id: str = Field(alias="noticeId", description="Send it back with the consent")
    job_id: str = Field(alias="jobId")
    job_version: int = Field(alias="jobVersion")
    collected: list[NoticeField] = Field(description="What the interview asks about, in the job's order")
    readers: list[str] = Field(description="Who reads the answers")
    retention_days: int = Field(alias="retentionDays", description="The interview is deleted this long after it starts")
    audit_record_retention_days: int = Field(
        alias="auditRecordRetentionDays", description="Records of the agents' tool calls are deleted after this"
    )
    text: dict[str, str] = Field(description="The notice as prose, by language (en, ja)")


READERS = [
    "the employer's hiring team for this job",
    "an AI model provider, which runs the interview agents and receives the conversation",
]


def notice_for(job: JobDefinition, retention: Retention) -> Notice:
    collected = [NoticeField(field_id=f.field_id, label=f.label, required=f.required) for f in job.fields]
    content = {
        "job_id": job.job_id,
        "job_version": job.version,
        "collected": [field.model_dump() for field in collected],
        "readers": READERS,
        "retention_days": retention.interview_days,
        "audit_record_retention_days": retention.run_step_days,
        "text": _text(job, collected, retention),
    }
    digest = hashlib.sha256(json.dumps(content, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()
    return Notice.model_validate({**content, "notice_id": digest[:32]})


def _text(job: JobDefinition, collected: list[NoticeField], retention: Retention) -> dict[str, str]:
    title = job.title or job.job_id
    en_fields = "; ".join(f"{f.label} ({'required' if f.required else 'optional'})" for f in collected)
    ja_fields = "、".join(f"{f.label}（{'必須' if f.required else '任意'}）" for f in collected)
    return {
        "en": (
            f"This interview for {title!r} asks about: {en_fields}. The employer's hiring team for this job "
            "reads your answers; AI agents run the interview, so the conversation is sent to an AI model "
            f"provider. Your interview is deleted {retention.interview_days} days after it starts, the records "
            f"of the agents' tool calls after {retention.run_step_days} days. You can skip optional questions, "
            "correct an answer, or withdraw at any time, which deletes everything. The interview begins once "
            "you agree."
        ),
        "ja": (
            f"この面接（{title}）では次の項目をお聞きします: {ja_fields}。回答はこの求人の採用担当者が読みます。"
            "面接は AI エージェントが進めるため、会話は AI モデルの提供者に送られます。面接のデータは開始から"
            f"{retention.interview_days}日後に、エージェントのツール呼び出しの記録は{retention.run_step_days}日後に"
            "削除されます。任意の質問はスキップでき、回答の訂正や応募の取り下げ（すべてのデータを削除）はいつでも"
            "できます。同意いただくと面接が始まります。"
        ),
    }
