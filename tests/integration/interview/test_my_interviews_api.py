"""``GET /interviews`` through InterviewFunction on moto (tables and indexes from template.yaml):
the caller's own interviews, newest first, paged with cursors bound to the caller; a withdrawn
interview leaves the list at once, and its index keys go with its items."""

from __future__ import annotations

from typing import Any

import pytest

from devtools.leftovers import items_mentioning
from tests.support.dynamo_faults import dynamo_fault

from .conftest import (
    APPLICANT,
    JOB,
    api_event,
    applicant_route,
    complete,
    create,
    invoke,
    stored_items,
)

pytestmark = pytest.mark.integration
OTHER = "applicant-0002"


def my_interviews(*, user: str | None = APPLICANT, **query: str) -> Any:
    return invoke(api_event("GET", "/interviews", user=user, query=query or None))


def listed(answer: Any) -> list[str]:
    assert answer.status == 200, answer.body
    return [item["sessionId"] for item in answer.body["items"]]


def started(count: int, *, user: str = APPLICANT, consented: bool = True) -> list[str]:
    return [create(user=user, consented=consented).body["sessionId"] for _ in range(count)]


def test_the_applicant_pages_through_their_interviews_newest_first_each_a_short_summary(aws: Any) -> None:
    a, b, c = started(3)
    (d,) = started(1, consented=False)
    complete(a)

    first = my_interviews(limit="3")
    second = my_interviews(limit="3", cursor=first.body["nextCursor"])

    assert [listed(first), listed(second)] == [[d, c, b], [a]]
    assert second.body["nextCursor"] is None
    summaries = {item["sessionId"]: item for item in first.body["items"] + second.body["items"]}
    assert summaries[d] == {
        "sessionId": d,
        "jobId": JOB["jobId"],
        "jobVersion": 1,
        "jobTitle": JOB["jobId"],  # the title the job was created with
        "status": "in_progress",
        "currentAgent": "greeter",
        "consented": False,
        "createdAt": summaries[d]["createdAt"],
        "updatedAt": summaries[d]["updatedAt"],
    }
    assert summaries[b]["consented"] is True
    # the finished one, as GET /interviews/{id} names it; the audit stays the employer's
    assert (summaries[a]["status"], summaries[a]["consented"]) == ("completed", True)
    assert summaries[a]["updatedAt"] > summaries[a]["createdAt"]
    assert "audit" not in str(first.body) + str(second.body)


def test_another_applicants_interviews_never_appear_and_their_cursor_is_a_400(aws: Any) -> None:
    mine = started(2)
    theirs = started(2, user=OTHER)

    assert listed(my_interviews()) == mine[::-1]
    assert listed(my_interviews(user=OTHER)) == theirs[::-1]
    assert listed(my_interviews(user="applicant-0003")) == []
    their_cursor = my_interviews(user=OTHER, limit="1").body["nextCursor"]
    refused = my_interviews(cursor=their_cursor)
    assert refused.status == 400 and "cursor" in str(refused.body["error"]), refused.body


def test_a_withdrawn_interview_is_gone_from_the_list_and_nothing_of_it_is_left_in_any_table(aws: Any) -> None:
    kept, withdrawn = started(2)
    complete(withdrawn, keys=True)
    assert {item["applicantId"] for item in stored_items(aws, withdrawn) if item["sk"] == "SESSION"} == {APPLICANT}

    assert applicant_route("DELETE", withdrawn).status == 204

    assert listed(my_interviews()) == [kept]
    assert items_mentioning(aws, withdrawn) == {}


def test_a_withdrawal_that_fails_after_its_mark_already_takes_the_interview_off_the_list(aws: Any) -> None:
    kept, withdrawn = started(2)

    with dynamo_fault("BatchWriteItem", "ValidationException") as fault:
        assert applicant_route("DELETE", withdrawn).status == 503
    assert fault.fired

    assert listed(my_interviews()) == [kept]  # marked: the head is still stored, out of the index
    head = next(item for item in stored_items(aws, withdrawn) if item["sk"] == "SESSION")
    assert "withdrawnAt" in head and "applicantId" not in head and "applicantSort" not in head
    assert applicant_route("DELETE", withdrawn).status == 204
    assert listed(my_interviews()) == [kept]


@pytest.mark.parametrize(
    "query",
    [{"limit": "0"}, {"limit": "101"}, {"limit": "many"}, {"cursor": "not a cursor"}, {"cursor": "x" * 600}],
    ids=["zero", "over 100", "not a number", "bad characters", "too long"],
)
def test_a_limit_out_of_range_or_a_malformed_cursor_is_a_400(aws: Any, query: dict[str, str]) -> None:
    refused = my_interviews(**query)
    assert refused.status == 400, refused.body


def test_a_garbled_cursor_of_the_right_shape_is_a_400_naming_the_cursor(aws: Any) -> None:
    refused = my_interviews(cursor="bm90LWEtY3Vyc29y")
    assert refused.status == 400 and "cursor" in str(refused.body["error"]), refused.body


def test_without_an_identity_the_list_is_a_401(aws: Any) -> None:
    assert my_interviews(user=None).status == 401
