"""DynamoDB reads of interviews as lists (InterviewsTable's sparse indexes; docs/interview.md):
the employer's applications of a job (``JobApplicationsIndex``) and an applicant's own interviews
(``ApplicantInterviewsIndex``), newest first; ``storage.interviews`` writes their keys."""

from __future__ import annotations

import re
from typing import Any

from boto3.dynamodb.conditions import Attr, Key

from ..interview.catalog.applications import ApplicationPage, ApplicationSummary
from ..interview.catalog.my_interviews import InterviewPage, InterviewPosition, InterviewSummary
from ..interview.rules.models import AgentName, SessionStatus
from ..paging import InvalidCursor, decode_key, encode_cursor
from .dynamodb import from_dynamo, guarded, query_newest_first, table
from .interviews import APPLICANT_INDEX, APPLICATIONS_INDEX, MAX_QUERY_PAGES, SESSION_SK, applicant_sort, session_pk

_CURSOR = re.compile(r"^[0-9T:.+-]{10,40}#[0-9a-f]{32}$")


class DynamoApplicationIndex:
    """A job's consented applications, newest first, from the sparse ``JobApplicationsIndex``.

    The cursor is the last item's sort key in a cursor bound to the job (``paging``): another
    job's cursor, or one edited to point into another job, is an ``InvalidCursor``. With a
    status filter a page may need several index pages; it stops at ``limit`` items and hands out
    the last item's cursor.
    """

    def __init__(self, table_name: str) -> None:
        self._table = table(table_name)

    def list_for_job(
        self, job_id: str, status: SessionStatus | None, limit: int, cursor: str | None
    ) -> ApplicationPage:
        kwargs: dict[str, Any] = {
            "IndexName": APPLICATIONS_INDEX,
            "KeyConditionExpression": Key("applicationJobId").eq(job_id),
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if status is not None:
            kwargs["FilterExpression"] = Attr("status").eq(status.value)
        if cursor is not None:
            sort = _application_sort(cursor, job_id)
            kwargs["ExclusiveStartKey"] = {
                "applicationJobId": job_id,
                "applicationSort": sort,
                "pk": session_pk(sort.rsplit("#", 1)[1]),
                "sk": SESSION_SK,
            }
        items: list[dict[str, Any]] = []
        more = False
        for _ in range(MAX_QUERY_PAGES):
            page = guarded(lambda: self._table.query(**kwargs))
            found = [from_dynamo(item) for item in page.get("Items", [])]
            room = limit - len(items)
            items += found[:room]
            last = page.get("LastEvaluatedKey")
            more = len(found) > room or last is not None
            if len(items) >= limit or last is None:
                break
            kwargs["ExclusiveStartKey"] = last
        summaries = [
            ApplicationSummary(
                application_id=item["sessionId"],
                job_id=job_id,
                job_version=item.get("jobVersion", 1),
                status=SessionStatus(item["status"]),
                consented_at=item["consentedAt"],
                created_at=item["createdAt"],
                updated_at=item["updatedAt"],
            )
            for item in items
        ]
        next_cursor = (
            encode_cursor(_applications_scope(job_id), {"sort": items[-1]["applicationSort"]})
            if more and items
            else None
        )
        return ApplicationPage(summaries, next_cursor)


class DynamoApplicantInterviews:
    """An applicant's own interviews (``interview.my_interviews.ApplicantInterviewIndex``), newest
    first, from the sparse ``ApplicantInterviewsIndex``: session heads carry its keys until their
    withdrawal is marked. The sort key is unique (one head per session), so a page continues with
    ``applicantSort <`` the last position rather than an ``ExclusiveStartKey``."""

    def __init__(self, table_name: str) -> None:
        self._table = table(table_name)

    def interviews_page(self, user_id: str, limit: int, before: InterviewPosition | None) -> InterviewPage:
        condition = Key("applicantId").eq(user_id)
        if before is not None:
            condition = condition & Key("applicantSort").lt(applicant_sort(before))
        query = {"IndexName": APPLICANT_INDEX, "KeyConditionExpression": condition}
        items, _ = query_newest_first(self._table, query, limit, MAX_QUERY_PAGES)
        shown = [_interview_summary(item) for item in items[:limit]]
        return InterviewPage(shown, shown[-1].position if len(items) > limit else None)


def _interview_summary(item: dict[str, Any]) -> InterviewSummary:
    agent = item.get("currentAgent")
    return InterviewSummary(
        session_id=item["sessionId"],
        job_id=item["jobId"],
        job_version=int(item.get("jobVersion", 1)),
        job_title=item.get("jobTitle"),
        status=SessionStatus(item["status"]),
        current_agent=None if agent is None else AgentName(agent),
        consented="consentedAt" in item,
        created_at=item["createdAt"],
        updated_at=item["updatedAt"],
    )


def _applications_scope(job_id: str) -> str:
    return f"job-applications/{job_id}"


def _application_sort(cursor: str, job_id: str) -> str:
    sort = decode_key(cursor, _applications_scope(job_id), frozenset({"sort"}))["sort"]
    if not _CURSOR.match(sort):
        raise InvalidCursor("cursor is not one this listing handed out")
    return sort
