"""The job catalog's listings through the handlers on moto (tables and indexes from template.yaml):
``GET /api/admin/jobs`` (JobsFunction, the employer) and ``GET /jobs`` (InterviewFunction, the
applicant), paged newest first with cursors bound to their listing."""

from __future__ import annotations

from typing import Any

import pytest
from boto3.dynamodb.types import TypeDeserializer

from .conftest import FIELDS, api_event, create_job, employer, invoke, start

pytestmark = pytest.mark.integration


def employer_jobs(**query: str) -> Any:
    return employer("GET", "/api/admin/jobs", query=query or None)


def open_jobs(*, user: str = "applicant-0002", **query: str) -> Any:
    return invoke(api_event("GET", "/jobs", user=user, query=query or None))


def job_path(job_id: str, suffix: str = "") -> dict[str, Any]:
    return {"resource": "/api/admin/jobs/{jobId}" + suffix, "path_parameters": {"jobId": job_id}}


def close(job_id: str) -> Any:
    return employer("POST", f"/api/admin/jobs/{job_id}/close", **job_path(job_id, "/close"))


def new_version(job_id: str, title: str, fields: list[dict[str, Any]]) -> Any:
    return employer("PUT", f"/api/admin/jobs/{job_id}", {"title": title, "fields": fields}, **job_path(job_id))


def jobs(*job_ids: str) -> None:
    for job_id in job_ids:  # created in this order: the last is the newest
        assert create_job({"jobId": job_id, "title": f"Barista {job_id}", "fields": FIELDS}).status == 201


def listed(answer: Any) -> list[str]:
    assert answer.status == 200, answer.body
    return [item["jobId"] for item in answer.body["items"]]


def head(client: Any, job_id: str) -> dict[str, Any]:
    item = client.get_item(TableName="InterviewsTable", Key={"pk": {"S": f"JOB#{job_id}"}, "sk": {"S": "JOB"}})
    return {key: TypeDeserializer().deserialize(value) for key, value in item["Item"].items()}


def test_the_employer_pages_through_every_job_newest_first_and_filters_by_status(aws: Any) -> None:
    jobs("job-a", "job-b", "job-c", "job-d", "job-e")
    assert close("job-b").status == 200

    first = employer_jobs(limit="2")
    second = employer_jobs(limit="2", cursor=first.body["nextCursor"])
    third = employer_jobs(limit="2", cursor=second.body["nextCursor"])

    assert [listed(first), listed(second), listed(third)] == [["job-e", "job-d"], ["job-c", "job-b"], ["job-a"]]
    assert third.body["nextCursor"] is None
    summary = first.body["items"][0]
    assert summary.keys() == {
        "jobId",
        "title",
        "status",
        "latestVersion",
        "createdAt",
        "updatedAt",
        "closedAt",
        "fieldCount",
    }
    assert (summary["title"], summary["status"], summary["latestVersion"], summary["fieldCount"]) == (
        "Barista job-e",
        "open",
        1,
        len(FIELDS),
    )
    closed = employer_jobs(status="closed")
    assert listed(closed) == ["job-b"] and closed.body["items"][0]["closedAt"] is not None
    assert listed(employer_jobs(status="open")) == ["job-e", "job-d", "job-c", "job-a"]
    filtered = employer_jobs(status="open", limit="3")
    assert listed(employer_jobs(status="open", cursor=filtered.body["nextCursor"])) == ["job-a"]


def test_an_applicant_sees_open_jobs_only_with_what_the_notice_shows_and_a_close_removes_one_at_once(
    aws: Any,
) -> None:
    jobs("job-a", "job-b", "job-c")
    assert listed(open_jobs()) == ["job-c", "job-b", "job-a"]
    listing = open_jobs().body["items"][0]
    assert listing.keys() == {"jobId", "title", "latestVersion", "fields"}
    assert listing["fields"] == [
        {"field_id": f["field_id"], "label": f["label"], "required": f["required"]} for f in FIELDS
    ]
    notice = start("job-c").body["notice"]
    assert listing["fields"] == notice["collected"]  # nothing more than the notice shows

    assert close("job-b").status == 200
    assert listed(open_jobs()) == ["job-c", "job-a"]
    assert listed(open_jobs(user="someone-else")) == ["job-c", "job-a"]  # the same list for every applicant
    assert "openJobs" not in head(aws, "job-b") and head(aws, "job-a")["openJobs"] == "OPEN"


def test_a_new_version_changes_the_title_and_fields_in_both_listings_and_keeps_the_order(aws: Any) -> None:
    jobs("job-a", "job-b")

    assert new_version("job-a", "Barista (part time)", FIELDS[1:]).status == 200

    employer_item = employer_jobs().body["items"][1]
    assert (employer_item["jobId"], employer_item["title"], employer_item["latestVersion"]) == (
        "job-a",
        "Barista (part time)",
        2,
    )
    assert employer_item["fieldCount"] == 1
    applicant_item = open_jobs().body["items"][1]
    assert (applicant_item["title"], [f["field_id"] for f in applicant_item["fields"]]) == (
        "Barista (part time)",
        [FIELDS[1]["field_id"]],
    )


def test_a_cursor_of_another_listing_or_filter_or_a_garbled_one_is_a_400_naming_the_cursor(aws: Any) -> None:
    jobs("job-a", "job-b")
    employers = employer_jobs(limit="1").body["nextCursor"]
    applicants = open_jobs(limit="1").body["nextCursor"]
    assert employers and applicants

    for refused in (
        open_jobs(cursor=employers),
        employer_jobs(cursor=applicants),
        employer_jobs(status="closed", cursor=employers),
        open_jobs(cursor="bm90LWEtY3Vyc29y"),
    ):
        assert refused.status == 400, refused.body
        assert refused.body["error"]["code"] == "INVALID_CURSOR"  # as every listing's cursor
        assert "query.cursor" in refused.body["error"]["message"]
    malformed = open_jobs(cursor="not a cursor!")
    assert malformed.status == 400 and "cursor" in str(malformed.body["error"])


@pytest.mark.parametrize("query", [{"limit": "0"}, {"limit": "101"}, {"limit": "ten"}, {"status": "archived"}], ids=str)
def test_a_limit_out_of_range_or_an_unknown_status_is_a_400(aws: Any, query: dict[str, str]) -> None:
    refused = employer_jobs(**query)
    assert refused.status == 400, refused.body
    assert next(iter(query)) in str(refused.body["error"])
    if "status" not in query:
        assert open_jobs(**query).status == 400


def test_each_listing_answers_only_its_own_kind_of_caller(aws: Any) -> None:
    assert employer("GET", "/api/admin/jobs", admin=None, user="applicant-0001").status == 401
    assert invoke(api_event("GET", "/jobs", user=None, admin="arn:aws:iam::123456789012:user/ops")).status == 401
