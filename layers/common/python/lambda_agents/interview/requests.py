"""The interview API's request bodies, validated at the edge: the employer's job (field
definitions with distinct ids), the applicant's start, consent and messages.

The applicant's client names a job and nothing more: the field definitions, ``required`` flags
included, come from the employer's catalog.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .catalog.jobs import JOB_ID_MAX_CHARS, JOB_ID_PATTERN, JobDraft
from .rules.models import MAX_FIELDS, MAX_MESSAGE_CHARS, FieldDefinition, Label

# C0 and C1 control characters (NUL, ESC, ...): shown to applicants and the model, they would
# corrupt a terminal or a log line; text of several lines (intent, done criteria) keeps tab and
# line breaks, one-line text (a title, a label, a fact's name) none.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_LINE_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _control_characters(fields: dict[str, str], pattern: re.Pattern[str]) -> list[str]:
    found = []
    for where, text in fields.items():
        hit = pattern.search(text)
        if hit is not None:
            found.append(f"{where} contains the control character U+{ord(hit.group()):04X}")
    return found


class JobUpdateBody(BaseModel):
    """A new version of a job: the whole definition (title and fields)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    title: Label
    fields: list[FieldDefinition] = Field(min_length=1, max_length=MAX_FIELDS)

    @field_validator("fields")
    @classmethod
    def _distinct_ids(cls, fields: list[FieldDefinition]) -> list[FieldDefinition]:
        ids = [field.field_id for field in fields]
        duplicates = sorted({field_id for field_id in ids if ids.count(field_id) > 1})
        if duplicates:
            raise ValueError(f"field_id defined more than once: {', '.join(duplicates)}")
        return fields

    @model_validator(mode="after")
    def _no_control_characters(self) -> JobUpdateBody:
        one_line = {"title": self.title}
        several_lines = {}
        for index, field in enumerate(self.fields):
            one_line[f"fields[{index}].label"] = field.label
            for fact_index, fact in enumerate(field.required_facts):
                one_line[f"fields[{index}].required_facts[{fact_index}]"] = fact
            several_lines[f"fields[{index}].intent"] = field.intent
            several_lines[f"fields[{index}].done_criteria"] = field.done_criteria
        problems = _control_characters(one_line, _LINE_CONTROL) + _control_characters(several_lines, _CONTROL)
        if problems:
            raise ValueError("; ".join(problems[:10]))
        return self

    def draft(self) -> JobDraft:
        return JobDraft(title=self.title, fields=self.fields)


class JobCreateBody(JobUpdateBody):
    job_id: str | None = Field(
        default=None,
        alias="jobId",
        pattern=JOB_ID_PATTERN,
        max_length=JOB_ID_MAX_CHARS,
        description="The employer's own id for the job (e.g. a requisition number); generated when absent",
    )


class CreateInterviewBody(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    job_id: str = Field(alias="jobId", min_length=1, max_length=JOB_ID_MAX_CHARS, pattern=JOB_ID_PATTERN)


class ConsentBody(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    accepted: bool = Field(
        strict=True,  # JSON true only: 1 or "yes" is not a consent
        description="Must be true; an applicant who does not consent withdraws (DELETE) instead",
    )
    notice_id: str = Field(
        alias="noticeId", pattern=r"^[0-9a-f]{32}$", max_length=32, description="The noticeId of the notice shown"
    )

    @field_validator("accepted")
    @classmethod
    def _given(cls, accepted: bool) -> bool:
        if not accepted:
            raise ValueError("must be true: an applicant who does not consent withdraws the interview (DELETE)")
        return accepted


class MessageBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)

    @field_validator("text")
    @classmethod
    def _not_blank(cls, text: str) -> str:
        if not text.strip():
            raise ValueError("text must not be blank")
        return text.strip()
