"""JobsFunction on moto (tables from template.yaml): the employer creates, versions and closes
jobs; an interview starts from a job id and keeps the version it started from; the employer
lists a job's applications (paged, newest first) and reads one with its facts, audit and
transcript."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import (
    FIELDS,
    JOB,
    api_event,
    complete,
    consent,
    create,
    create_job,
    employer,
    get_interview,
    invoke,
    read_application,
    start,
)

pytestmark = pytest.mark.integration

JOB_ID = JOB["jobId"]


def job_route(method: str, suffix: str = "", body: Any = None, *, job_id: str = JOB_ID, **query: str) -> Any:
    resource = "/api/admin/jobs/{jobId}" + suffix
    return employer(
        method,
        f"/api/admin/jobs/{job_id}{suffix}",
        body,
        resource=resource,
        path_parameters={"jobId": job_id},
        query=query or None,
    )


def applications(**query: str) -> Any:
    return job_route("GET", "/applications", **query)


def test_the_employer_creates_versions_and_closes_a_job(aws: Any) -> None:
    created = create_job()
    assert created.status == 201
    assert (created.body["jobId"], created.body["version"], created.body["status"]) == (JOB_ID, 1, "open")
    assert [f["field_id"] for f in created.body["fields"]] == ["experience", "motivation"]

    updated = job_route("PUT", body={"title": "Barista (v2)", "fields": [FIELDS[1]]})
    assert (updated.status, updated.body["version"], updated.body["title"]) == (200, 2, "Barista (v2)")
    assert [f["field_id"] for f in job_route("GET").body["fields"]] == ["motivation"]
    first = job_route("GET", version="1").body
    assert (first["version"], [f["field_id"] for f in first["fields"]]) == (1, ["experience", "motivation"])

    closed = job_route("POST", "/close")
    assert (closed.status, closed.body["status"], closed.body["version"]) == (200, "closed", 2)
    assert job_route("POST", "/close").body["closedAt"] == closed.body["closedAt"]  # closing twice changes nothing
    refused = job_route("PUT", body={"title": "v3", "fields": FIELDS})
    assert (refused.status, refused.body["error"]["code"]) == (409, "JOB_CLOSED")


def test_a_job_id_is_taken_once_and_an_unknown_job_or_version_is_404(aws: Any) -> None:
    create_job()
    again = create_job()
    assert (again.status, again.body["error"]["code"]) == (409, "JOB_EXISTS")
    assert job_route("GET", job_id="no-such-job").body["error"]["code"] == "JOB_NOT_FOUND"
    assert job_route("GET", version="9").status == 404
    assert (start("no-such-job").status, start("no-such-job").body["error"]["code"]) == (404, "JOB_NOT_FOUND")


def test_without_a_job_id_the_job_gets_a_generated_one(aws: Any) -> None:
    made = employer("POST", "/api/admin/jobs", {"title": "Barista", "fields": FIELDS})
    assert made.status == 201 and len(made.body["jobId"]) == 32


def test_the_applicants_client_cannot_send_field_definitions(aws: Any) -> None:
    create_job()
    answer = invoke(api_event("POST", "/interviews", {"jobId": JOB_ID, "fields": [FIELDS[1]]}))
    assert answer.status == 400
    assert "body.fields" in [detail["field"] for detail in answer.body["error"]["details"]]


def test_an_interview_keeps_the_job_version_it_started_from(aws: Any) -> None:
    early = create().body["sessionId"]
    job_route("PUT", body={"title": "Barista", "fields": [FIELDS[1]]})
    late = create().body["sessionId"]

    assert get_interview(early).body["jobVersion"] == 1
    assert [f["field_id"] for f in get_interview(early).body["fields"]] == ["experience", "motivation"]
    assert get_interview(late).body["jobVersion"] == 2
    assert [f["field_id"] for f in get_interview(late).body["fields"]] == ["motivation"]
    assert read_application(early).body["jobVersion"] == 1


def test_a_closed_job_starts_no_interview_but_one_already_running_finishes(aws: Any) -> None:
    running = create().body["sessionId"]
    job_route("POST", "/close")
    refused = start(JOB_ID)
    assert (refused.status, refused.body["error"]["code"]) == (409, "JOB_CLOSED")
    assert complete(running).body["status"] == "completed"


def test_applications_are_listed_newest_first_paged_and_filtered_consented_ones_only(aws: Any) -> None:
    sessions = [create(user=f"applicant-{n}").body["sessionId"] for n in range(3)]
    unconsented = create(user="applicant-x", consented=False).body["sessionId"]
    mine = create().body["sessionId"]  # the default applicant's, finished below
    complete(mine)

    page = applications(limit="2")
    assert page.status == 200
    listed = [item["applicationId"] for item in page.body["items"]]
    assert listed == [mine, sessions[2]]  # newest first
    rest = applications(limit="2", cursor=page.body["nextCursor"]).body
    assert [item["applicationId"] for item in rest["items"]] == [sessions[1], sessions[0]]
    assert rest["nextCursor"] is None
    everything = {item["applicationId"] for item in applications(limit="100").body["items"]}
    assert unconsented not in everything  # nothing was collected, there is nothing to read

    finished = applications(status="completed").body
    assert [(item["applicationId"], item["status"]) for item in finished["items"]] == [(mine, "completed")]
    assert finished["nextCursor"] is None


# The last one is the listing's old shape: a bare sort key, bound to no job.
@pytest.mark.parametrize("cursor", ["not-base64!", "aGVsbG8", "MjAyNS0wMS0wMVQwMDowMDowMCMxMjM"])
def test_a_cursor_this_listing_did_not_hand_out_is_a_400_naming_it(aws: Any, cursor: str) -> None:
    create_job()
    answer = applications(cursor=cursor)
    assert (answer.status, answer.body["error"]["code"]) == (400, "INVALID_CURSOR")
    assert answer.body["error"]["details"][0]["field"] == "query.cursor"


def test_another_jobs_cursor_reads_nothing_of_that_job(aws: Any) -> None:
    """A cursor names a position in one job's applications: the employer cannot page another
    job's applications through this job's listing, nor the reverse."""
    other = {**JOB, "jobId": "job-other"}
    for n in range(3):
        create(other, user=f"applicant-{n}")
    create()
    page = job_route("GET", "/applications", job_id="job-other", limit="1")
    assert page.status == 200 and page.body["nextCursor"] is not None

    answer = applications(cursor=page.body["nextCursor"])

    assert (answer.status, answer.body["error"]["code"]) == (400, "INVALID_CURSOR")
    assert answer.body["error"]["details"] == [{"field": "query.cursor"}]


def test_the_employer_reads_an_application_with_its_facts_audit_and_transcript(aws: Any) -> None:
    session_id = create().body["sessionId"]
    complete(session_id)
    answer = read_application(session_id)
    assert answer.status == 200
    view = answer.body
    assert (view["applicationId"], view["applicantId"], view["status"]) == (session_id, "applicant-0001", "completed")
    assert view["collectedFacts"]["experience"]["経験年数"].startswith("5年")
    assert view["audit"]["passed"] is True and view["audit"]["summary"].startswith("応募者の回答")
    assert len(view["messages"]) == 8 and view["messages"][-1]["data"]["audit"]["passed"] is True
    assert view["consent"]["noticeId"]


def test_an_application_of_another_job_or_not_consented_is_404_like_an_unknown_one(aws: Any) -> None:
    session_id = create().body["sessionId"]
    other = {"jobId": "job-other", "fields": FIELDS}
    create_job(other)
    assert read_application(session_id, "job-other").status == 404
    unconsented = start(JOB_ID).body["sessionId"]
    assert read_application(unconsented).status == 404
    consent(unconsented, get_interview(unconsented).body["notice"]["noticeId"])
    assert read_application(unconsented).status == 200
    assert read_application("0" * 32).status == 404
    assert read_application("not-an-id").status == 400  # malformed: refused before anything is read


def test_the_employer_routes_take_no_applicant_identity(aws: Any) -> None:
    answer = employer("POST", "/api/admin/jobs", {"title": "t", "fields": FIELDS}, admin=None, user="applicant-0001")
    assert (answer.status, answer.body["error"]["code"]) == (401, "UNAUTHORIZED")
