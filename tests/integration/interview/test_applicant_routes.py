"""InterviewFunction on moto: the applicant's notice and consent, skip, correction and withdrawal;
the application events a hiring team receives (EventBridge -> its SQS queue); deletion that
leaves nothing in any table; another user's interview is a 404 on every route."""

from __future__ import annotations

import time
from typing import Any

import pytest
from lambda_agents.interview.rules.application_events import PublishFailed
from lambda_agents.storage.application_events import EventBridgePublisher
from lambda_agents.storage.run_steps import DynamoRunStepRecorder

from functions.application_events_relay import app as relay_app
from functions.interview import app as interview_app
from tests.support.dynamo_faults import dynamo_fault

from .conftest import (
    APPLICANT,
    JOB,
    SCRIPT,
    WITH_HOBBY,
    TeamQueue,
    applicant_route,
    complete,
    consent,
    context,
    create,
    get_interview,
    post_message,
    scan_all,
)

pytestmark = pytest.mark.integration


def model_calls() -> int:
    return len(interview_app.dependencies().model.calls)  # type: ignore[attr-defined]


# -- notice and consent --------------------------------------------------------------------------


def test_the_interview_begins_only_after_the_applicant_consents_to_the_notice(aws: Any) -> None:
    created = create(consented=False)
    assert created.status == 201
    notice = created.body["notice"]
    assert [f["field_id"] for f in notice["collected"]] == ["experience", "motivation"]
    assert notice["retentionDays"] == 90 and notice["auditRecordRetentionDays"] == 7
    assert "採用担当者" in notice["text"]["ja"]
    session_id = created.body["sessionId"]

    refused = post_message(session_id, SCRIPT[0])
    assert (refused.status, refused.body["error"]["code"]) == (409, "CONSENT_REQUIRED")
    assert model_calls() == 0
    stale = consent(session_id, "0" * 32)
    assert (stale.status, stale.body["error"]["code"]) == (409, "NOTICE_CHANGED")
    declined = applicant_route("POST", session_id, "consent", {"accepted": False, "noticeId": notice["noticeId"]})
    assert declined.status == 400 and declined.body["error"]["details"][0]["field"] == "body.accepted"

    agreed = consent(session_id, notice["noticeId"])
    assert agreed.status == 200 and agreed.body["consent"]["noticeId"] == notice["noticeId"]
    assert post_message(session_id, SCRIPT[0]).status == 200


# -- skip and correction -------------------------------------------------------------------------


def test_an_optional_field_is_skipped_a_required_one_is_not(aws: Any) -> None:
    session_id = create(WITH_HOBBY).body["sessionId"]
    skipped = applicant_route("POST", session_id, "skip", field_id="hobby")
    assert skipped.status == 200 and skipped.body["fieldStatuses"]["hobby"] == "skipped"
    required = applicant_route("POST", session_id, "skip", field_id="experience")
    assert (required.status, required.body["error"]["code"]) == (409, "FIELD_REQUIRED")
    unknown = applicant_route("POST", session_id, "skip", field_id="salary")
    assert (unknown.status, unknown.body["error"]["code"]) == (404, "FIELD_NOT_FOUND")

    answers = [post_message(session_id, text) for text in SCRIPT]
    assert answers[-1].body["status"] == "completed"  # the skipped field was never asked
    assert all("趣味" not in answer.body["reply"] for answer in answers)


def test_a_corrected_answer_is_reviewed_audited_again_and_announced_as_a_new_completion(
    aws: Any, team_queue: TeamQueue
) -> None:
    session_id = create().body["sessionId"]
    complete(session_id)
    corrected = "東京のカフェ森で7年間働いていました。店長も務めました。"

    answer = applicant_route("POST", session_id, "correction", {"text": corrected}, field_id="experience", key="fix-1")
    assert answer.status == 200, answer.body
    assert (answer.body["status"], answer.body["replyKind"]) == ("completed", "completed")
    view = get_interview(session_id).body
    assert view["collectedFacts"]["experience"] == {"経験年数": corrected, "勤務先": corrected}
    assert view["messages"][-2]["data"] == {"correctionOf": "experience"}

    calls = model_calls()
    retried = applicant_route("POST", session_id, "correction", {"text": corrected}, field_id="experience", key="fix-1")
    assert retried.body == answer.body and model_calls() == calls  # the retry runs no agent

    events = team_queue.received()
    assert [e["detail-type"] for e in events] == ["Application Completed", "Application Completed"]
    assert len({e["detail"]["eventId"] for e in events}) == 2


def test_a_field_not_finished_cannot_be_corrected(aws: Any) -> None:
    session_id = create().body["sessionId"]
    answer = applicant_route("POST", session_id, "correction", {"text": "5年です"}, field_id="experience")
    assert (answer.status, answer.body["error"]["code"]) == (409, "FIELD_NOT_FINISHED")


# -- events --------------------------------------------------------------------------------------


def test_a_completed_application_is_announced_once_with_ids_only(aws: Any, team_queue: TeamQueue) -> None:
    session_id = create().body["sessionId"]
    complete(session_id)
    events = team_queue.received()
    assert len(events) == 1
    assert (events[0]["source"], events[0]["detail-type"]) == ("lambda-agents.interview", "Application Completed")
    detail = events[0]["detail"]
    assert (detail["applicationId"], detail["jobId"], detail["jobVersion"], detail["status"]) == (
        session_id,
        JOB["jobId"],
        1,
        "completed",
    )
    assert "カフェ" not in str(events)  # no answers travel in events
    outbox = [item for item in scan_all(aws)["InterviewsTable"] if item["pk"] == "APPLICATION_EVENTS"]
    assert outbox == []


def test_when_the_bus_is_down_the_event_waits_in_the_outbox_and_the_relay_publishes_it(
    aws: Any, team_queue: TeamQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = create().body["sessionId"]

    def unreachable(self: Any, events: Any) -> list[str]:
        raise PublishFailed("EndpointConnectionError")

    monkeypatch.setattr(EventBridgePublisher, "publish", unreachable)
    assert complete(session_id).status == 200  # the applicant's turn does not fail
    assert team_queue.received() == []
    outbox = [item for item in scan_all(aws)["InterviewsTable"] if item["pk"] == "APPLICATION_EVENTS"]
    assert [item["status"] for item in outbox] == ["completed"]

    monkeypatch.undo()
    monkeypatch.setenv("INTERVIEWS_TABLE", "InterviewsTable")
    monkeypatch.setenv("APPLICATION_EVENT_BUS", "default")
    monkeypatch.setenv("OUTBOX_GRACE_SECONDS", "0")
    relay_app.dependencies.reset()
    report = relay_app.lambda_handler({"source": "aws.events"}, context())
    relay_app.dependencies.reset()
    assert report == {"pending": 1, "delivered": 1}
    assert [e["detail"]["applicationId"] for e in team_queue.received()] == [session_id]
    assert not [item for item in scan_all(aws)["InterviewsTable"] if item["pk"] == "APPLICATION_EVENTS"]


# -- withdrawal ----------------------------------------------------------------------------------


def _leftovers(aws: Any, session_id: str) -> dict[str, list[dict[str, Any]]]:
    """Every item, in every table, that holds the session's id or the applicant's."""
    found = {}
    for name, items in scan_all(aws).items():
        hits = [item for item in items if session_id in str(item) or APPLICANT in str(item)]
        if hits:
            found[name] = hits
    return found


def test_withdrawing_deletes_everything_written_for_the_interview_in_every_table(
    aws: Any, team_queue: TeamQueue
) -> None:
    session_id = create().body["sessionId"]
    complete(session_id, keys=True)  # turns with Idempotency-Key leave retry records
    assert DynamoRunStepRecorder("InterviewsTable").for_session(session_id)
    assert _leftovers(aws, session_id).keys() == {"InterviewsTable", "InterviewIdempotencyTable"}

    answer = applicant_route("DELETE", session_id)

    assert (answer.status, answer.body) == (204, None)
    assert _leftovers(aws, session_id) == {}
    everything = scan_all(aws)
    assert everything["InterviewIdempotencyTable"] == []
    assert {item["pk"] for item in everything["InterviewsTable"]} == {f"JOB#{JOB['jobId']}"}  # the employer's job
    assert get_interview(session_id).status == 404
    assert applicant_route("DELETE", session_id).status == 404
    assert [e["detail-type"] for e in team_queue.received()] == ["Application Completed", "Application Withdrawn"]


def test_a_withdrawal_that_fails_halfway_is_finished_by_its_retry(aws: Any, team_queue: TeamQueue) -> None:
    session_id = create().body["sessionId"]
    post_message(session_id, SCRIPT[0], key="turn-1")
    with dynamo_fault("BatchWriteItem", "ValidationException") as fault:
        failed = applicant_route("DELETE", session_id)
    assert fault.fired and failed.status == 503
    assert get_interview(session_id).status == 404  # marked first: gone for every reader already
    assert post_message(session_id, SCRIPT[1]).status == 404

    assert applicant_route("DELETE", session_id).status == 204
    assert _leftovers(aws, session_id) == {}
    assert [e["detail-type"] for e in team_queue.received()] == ["Application Withdrawn"]  # announced once


def test_run_steps_expire_after_days_not_months(aws: Any) -> None:
    session_id = create().body["sessionId"]
    post_message(session_id, SCRIPT[0])
    steps = DynamoRunStepRecorder("InterviewsTable").for_session(session_id)
    head = next(
        i for i in scan_all(aws)["InterviewsTable"] if i["pk"] == f"SESSION#{session_id}" and i["sk"] == "SESSION"
    )
    assert steps and all(abs(int(step["expiresAt"]) - time.time() - 7 * 86400) < 600 for step in steps)
    assert int(head["expiresAt"]) - int(steps[0]["expiresAt"]) > 80 * 86400  # the interview itself: 90 days


# -- another user's interview --------------------------------------------------------------------

ROUTES = [
    ("GET", "", None, None),
    ("DELETE", "", None, None),
    ("POST", "consent", {"accepted": True, "noticeId": "0" * 32}, None),
    ("POST", "messages", {"text": "hi"}, None),
    ("POST", "correction", {"text": "hi"}, "experience"),
    ("POST", "skip", None, "experience"),
]


@pytest.mark.parametrize(("method", "action", "body", "field_id"), ROUTES, ids=str)
def test_another_users_interview_is_404_on_every_applicant_route_and_stays_untouched(
    aws: Any, method: str, action: str, body: Any, field_id: str | None
) -> None:
    session_id = create().body["sessionId"]
    before = scan_all(aws)
    answer = applicant_route(method, session_id, action, body, field_id=field_id, user="someone-else")
    assert (answer.status, answer.body["error"]["code"]) == (404, "NOT_FOUND")
    assert scan_all(aws) == before
    assert model_calls() == 0
