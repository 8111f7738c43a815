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

The catalog's listings read two sparse indexes, written only on heads, so listing never scans:
- ``JobCatalogIndex`` (``jobCatalog`` = ``JOBS``, ``jobCatalogSort`` = ``<createdAt>#<jobId>``):
  every job, for the employer; a status filter is a filter on it (a page may read several index
  pages, at most ``MAX_QUERY_PAGES``);
- ``OpenJobsIndex`` (``openJobs`` = ``OPEN``, same sort key): open jobs only, for applicants. Every
  head put (create, new version: both require an open job) writes ``openJobs``; the close removes
  it in the update that sets ``status = closed``, so a closed job leaves the list at once.
One partition per index is enough for a job catalog (an employer's jobs, not applicants' data);
the sort key is unique (one head per job id), so a page continues with ``jobCatalogSort <`` the
last position rather than an ``ExclusiveStartKey``, which a job closed meanwhile would remove.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from boto3.dynamodb.conditions import Attr, Key

from ..interview.catalog.jobs import Job, JobStatus
from ..interview.catalog.listings import CatalogPage, CatalogPosition, JobSummary, OpenJob
from ..interview.catalog.notice import NoticeField
from ..interview.errors import JobChanged, JobClosed, JobExists, JobNotFound
from .dynamodb import ConditionFailed, from_dynamo, guarded, query_newest_first, table, to_dynamo, transact_write

JOB_SK = "JOB"
CATALOG_INDEX = "JobCatalogIndex"
OPEN_JOBS_INDEX = "OpenJobsIndex"
CATALOG_PARTITION = "JOBS"
OPEN_PARTITION = "OPEN"
MAX_QUERY_PAGES = 50
T = TypeVar("T")


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
        "fieldCount": len(job.fields),
        "jobCatalog": CATALOG_PARTITION,
        "jobCatalogSort": catalog_sort(CatalogPosition(job.created_at, job.job_id)),
    }
    if job.status is JobStatus.OPEN:
        item["openJobs"] = OPEN_PARTITION
    if job.closed_at is not None:
        item["closedAt"] = job.closed_at
    return item


def catalog_sort(position: CatalogPosition) -> str:
    return f"{position.created_at}#{position.job_id}"


def _position(sort: str) -> CatalogPosition:
    created_at, job_id = sort.rsplit("#", 1)
    return CatalogPosition(created_at, job_id)


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
                    UpdateExpression=(
                        "SET #status = :closed, closedAt = if_not_exists(closedAt, :at), updatedAt = :at"
                        " REMOVE openJobs"
                    ),
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


class DynamoJobCatalog:
    """The catalog's listings (``interview.catalog.listings.JobCatalogIndex``) from the two sparse indexes."""

    def __init__(self, table_name: str) -> None:
        self._table = table(table_name)

    def jobs_page(
        self, status: JobStatus | None, limit: int, before: CatalogPosition | None
    ) -> CatalogPage[JobSummary]:
        kwargs: dict[str, Any] = {"IndexName": CATALOG_INDEX}
        if status is not None:
            kwargs["FilterExpression"] = Attr("status").eq(status.value)
        return self._page("jobCatalog", CATALOG_PARTITION, kwargs, limit, before, _summary)

    def open_jobs_page(self, limit: int, before: CatalogPosition | None) -> CatalogPage[OpenJob]:
        return self._page("openJobs", OPEN_PARTITION, {"IndexName": OPEN_JOBS_INDEX}, limit, before, _open_job)

    def _page(
        self,
        partition_name: str,
        partition: str,
        kwargs: dict[str, Any],
        limit: int,
        before: CatalogPosition | None,
        read: Callable[[dict[str, Any]], T],
    ) -> CatalogPage[T]:
        """Up to ``limit`` items older than ``before``. One item more is asked for, so the last page
        hands out no cursor; a filtered listing reads on while the index has more and the page has room."""
        condition = Key(partition_name).eq(partition)
        if before is not None:
            condition = condition & Key("jobCatalogSort").lt(catalog_sort(before))
        query = {**kwargs, "KeyConditionExpression": condition}
        items, last = query_newest_first(self._table, query, limit, MAX_QUERY_PAGES)
        if len(items) > limit:
            shown = items[:limit]
            return CatalogPage([read(item) for item in shown], _position(shown[-1]["jobCatalogSort"]))
        # Out of index pages with room left: continue after the last job read, shown or filtered out.
        following = None if last is None else _position(last["jobCatalogSort"])
        return CatalogPage([read(item) for item in items], following)


def _summary(item: dict[str, Any]) -> JobSummary:
    return JobSummary(
        job_id=item["jobId"],
        title=item["title"],
        status=JobStatus(item["status"]),
        latest_version=int(item["latestVersion"]),
        created_at=item["createdAt"],
        updated_at=item["updatedAt"],
        closed_at=item.get("closedAt"),
        field_count=int(item["fieldCount"]),
    )


def _open_job(item: dict[str, Any]) -> OpenJob:
    return OpenJob(
        job_id=item["jobId"],
        title=item["title"],
        latest_version=int(item["latestVersion"]),
        created_at=item["createdAt"],
        fields=[
            NoticeField(field_id=field["field_id"], label=field["label"], required=field["required"])
            for field in item["fields"]
        ],
    )
