"""DynamoDB adapter for the employer's job catalog (InterviewsTable, next to the interviews).

Item design:
- head ``pk=JOB#<id>, sk=JOB``: status, ``latestVersion`` and a copy of the latest version
  (title, fields), so starting an interview reads one item;
- version ``pk=JOB#<id>, sk=VERSION#<n:05d>``: one immutable item per version, the history an
  application's fields are read against.

Jobs have no TTL: they are the employer's records. A new version is one transaction: the
version item put on ``attribute_not_exists`` and the head put on ``latestVersion = n - 1 AND
status = open``, so two concurrent updates or an update racing a close cannot both win.
Interviews check ``status = open`` on the head in their own first write (``storage/interviews.py``).
"""

from __future__ import annotations

from typing import Any

from ..interview.errors import JobChanged, JobClosed, JobExists, JobNotFound
from ..interview.jobs import Job, JobStatus
from .dynamodb import ConditionFailed, from_dynamo, guarded, table, to_dynamo, transact_write

JOB_SK = "JOB"


def job_pk(job_id: str) -> str:
    return f"JOB#{job_id}"


def version_sk(version: int) -> str:
    return f"VERSION#{version:05d}"


def job_head_key(job_id: str) -> dict[str, str]:
    return {"pk": job_pk(job_id), "sk": JOB_SK}


def _version_item(job: Job) -> dict[str, Any]:
    return {
        "pk": job_pk(job.job_id),
        "sk": version_sk(job.version),
        "type": "job_version",
        "jobId": job.job_id,
        "version": job.version,
        "title": job.title,
        "fields": [field.model_dump(mode="json") for field in job.fields],
        "createdAt": job.updated_at,
        "createdBy": job.created_by,
    }


def _head_item(job: Job) -> dict[str, Any]:
    item: dict[str, Any] = {
        **job_head_key(job.job_id),
        "type": "job_catalog",
        "jobId": job.job_id,
        "status": job.status.value,
        "latestVersion": job.version,
        "title": job.title,
        "fields": [field.model_dump(mode="json") for field in job.fields],
        "createdAt": job.created_at,
        "updatedAt": job.updated_at,
        "updatedBy": job.created_by,
    }
    if job.closed_at is not None:
        item["closedAt"] = job.closed_at
    return item


class DynamoJobRepository:
    def __init__(self, table_name: str) -> None:
        self._table_name = table_name
        self._table = table(table_name)

    def create(self, job: Job) -> None:
        try:
            transact_write(
                [
                    {
                        "Put": {
                            "TableName": self._table_name,
                            "Item": to_dynamo(_head_item(job)),
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                    {"Put": {"TableName": self._table_name, "Item": to_dynamo(_version_item(job))}},
                ]
            )
        except ConditionFailed:
            raise JobExists(f"a job {job.job_id!r} already exists") from None

    def load(self, job_id: str, version: int | None = None) -> Job | None:
        head = self._get(job_head_key(job_id))
        if head is None:
            return None
        if version is None or version == head["latestVersion"]:
            title, fields, number, by = head["title"], head["fields"], head["latestVersion"], head["updatedBy"]
            updated_at = head["updatedAt"]
        else:
            stored = self._get({"pk": job_pk(job_id), "sk": version_sk(version)})
            if stored is None:
                return None
            title, fields, number, by = stored["title"], stored["fields"], stored["version"], stored["createdBy"]
            updated_at = stored["createdAt"]
        return Job.model_validate(
            {
                "job_id": job_id,
                "version": number,
                "title": title,
                "fields": fields,
                "status": head["status"],
                "created_at": head["createdAt"],
                "updated_at": updated_at,
                "created_by": by,
                "closed_at": head.get("closedAt"),
            }
        )

    def add_version(self, job: Job) -> None:
        try:
            transact_write(
                [
                    {
                        "Put": {
                            "TableName": self._table_name,
                            "Item": to_dynamo(_version_item(job)),
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                    {
                        "Put": {
                            "TableName": self._table_name,
                            "Item": to_dynamo(_head_item(job)),
                            "ConditionExpression": "latestVersion = :previous AND #status = :open",
                            "ExpressionAttributeNames": {"#status": "status"},
                            "ExpressionAttributeValues": {":previous": job.version - 1, ":open": JobStatus.OPEN.value},
                        }
                    },
                ]
            )
        except ConditionFailed:
            current = self.load(job.job_id)
            if current is not None and current.status is JobStatus.CLOSED:
                raise JobClosed(f"job {job.job_id!r} is closed: it takes no new version") from None
            raise JobChanged(f"job {job.job_id!r} changed meanwhile: read it again and send the update again") from None

    def close(self, job_id: str, closed_at: str) -> None:
        try:
            guarded(
                lambda: self._table.update_item(
                    Key=job_head_key(job_id),
                    UpdateExpression="SET #status = :closed, closedAt = if_not_exists(closedAt, :at), updatedAt = :at",
                    ConditionExpression="attribute_exists(pk)",
                    ExpressionAttributeNames={"#status": "status"},
                    ExpressionAttributeValues={":closed": JobStatus.CLOSED.value, ":at": closed_at},
                )
            )
        except ConditionFailed:
            raise JobNotFound(f"no job {job_id!r}") from None

    def _get(self, key: dict[str, str]) -> dict[str, Any] | None:
        found = guarded(lambda: self._table.get_item(Key=key, ConsistentRead=True)).get("Item")
        return None if found is None else dict(from_dynamo(found))
