"""The interview API's request bodies (spec 003 API), validated at the edge: a job's field
definitions with distinct ids, and an applicant's message."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .models import JOB_ID_PATTERN, MAX_FIELDS, MAX_MESSAGE_CHARS, FieldDefinition, JobDefinition


class CreateInterviewBody(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    job_id: str = Field(alias="jobId", min_length=1, max_length=128, pattern=JOB_ID_PATTERN)
    fields: list[FieldDefinition] = Field(min_length=1, max_length=MAX_FIELDS)

    @field_validator("fields")
    @classmethod
    def _distinct_ids(cls, fields: list[FieldDefinition]) -> list[FieldDefinition]:
        ids = [field.field_id for field in fields]
        duplicates = sorted({field_id for field_id in ids if ids.count(field_id) > 1})
        if duplicates:
            raise ValueError(f"field_id defined more than once: {', '.join(duplicates)}")
        return fields

    def job(self) -> JobDefinition:
        return JobDefinition(job_id=self.job_id, fields=self.fields)


class MessageBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)

    @field_validator("text")
    @classmethod
    def _not_blank(cls, text: str) -> str:
        if not text.strip():
            raise ValueError("text must not be blank")
        return text.strip()
