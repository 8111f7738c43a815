"""An applicant's own interviews as a list: only the caller's, newest first, paged with cursors
bound to the caller, a withdrawn interview gone at once (an in-memory index over the in-memory
repository stands for the sparse index on session heads)."""

from __future__ import annotations

import base64
from dataclasses import dataclass

import pytest
from lambda_agents.interview.catalog.my_interviews import (
    MAX_PAGE,
    InterviewPage,
    InterviewPosition,
    InterviewSummary,
    MyInterviews,
)
from lambda_agents.interview.rules.models import AgentName, InterviewSession, SessionStatus
from lambda_agents.interview.service import InterviewService
from lambda_agents.paging import InvalidCursor, encode_cursor

from .support import JOB, InMemoryRepository, PurposeScript, clock_ticking_by_the_minute, harness

SESSION = "0" * 32


@dataclass
class InMemoryApplicantIndex:
    """The index as the repository holds it: a withdrawn interview is no longer stored."""

    repository: InMemoryRepository

    def interviews_page(self, user_id: str, limit: int, before: InterviewPosition | None) -> InterviewPage:
        own = sorted(
            (
                _summary(stored.session)
                for stored in self.repository.stored.values()
                if stored.session.user_id == user_id
            ),
            key=lambda summary: summary.position,
            reverse=True,
        )
        older = [summary for summary in own if before is None or summary.position < before]
        shown = older[:limit]
        return InterviewPage(shown, shown[-1].position if len(older) > limit else None)


def _summary(session: InterviewSession) -> InterviewSummary:
    return InterviewSummary(
        session_id=session.session_id,
        job_id=session.job.job_id,
        job_version=session.job.version,
        job_title=session.job.title or None,
        status=session.state.status,
        current_agent=session.state.current_agent,
        consented=session.state.consent is not None,
        created_at=session.created_at,
        updated_at=session.updated_at,
    )


@dataclass
class Applicants:
    service: InterviewService
    mine: MyInterviews

    def start(self, user_id: str, count: int = 1) -> list[str]:
        return [self.service.create(user_id, JOB).session_id for _ in range(count)]


@pytest.fixture
def applicants() -> Applicants:
    h = harness(PurposeScript())
    ids = (f"{n:032x}" for n in range(1, 10_000))
    service = InterviewService(
        h.repository, h.orchestrator, clock=clock_ticking_by_the_minute(), new_session_id=lambda: next(ids)
    )
    return Applicants(service, MyInterviews(InMemoryApplicantIndex(h.repository)))


def listed(items: list[InterviewSummary]) -> list[str]:
    return [item.session_id for item in items]


def test_given_five_interviews_when_the_applicant_pages_by_two_then_the_newest_come_first_and_the_last_page_ends(
    applicants: Applicants,
) -> None:
    a, b, c, d, e = applicants.start("applicant-1", 5)

    first = applicants.mine.list("applicant-1", limit=2)
    second = applicants.mine.list("applicant-1", limit=2, cursor=first.next_cursor)
    third = applicants.mine.list("applicant-1", limit=2, cursor=second.next_cursor)

    assert [listed(first.items), listed(second.items), listed(third.items)] == [[e, d], [c, b], [a]]
    assert third.next_cursor is None
    summary = first.items[0]
    assert (summary.job_id, summary.job_version, summary.status, summary.current_agent, summary.consented) == (
        JOB.job_id,
        JOB.version,
        SessionStatus.IN_PROGRESS,
        AgentName.GREETER,
        False,
    )


def test_given_interviews_of_two_applicants_when_one_lists_then_only_their_own_are_listed(
    applicants: Applicants,
) -> None:
    mine = applicants.start("applicant-1", 2)
    theirs = applicants.start("applicant-2", 3)

    assert listed(applicants.mine.list("applicant-1").items) == mine[::-1]
    assert listed(applicants.mine.list("applicant-2").items) == theirs[::-1]
    assert applicants.mine.list("applicant-3").items == []


def test_given_a_consent_when_listed_then_the_summary_says_consent_was_given(applicants: Applicants) -> None:
    (session_id,) = applicants.start("applicant-1")
    session = applicants.service.get("applicant-1", session_id).session

    applicants.service.consent("applicant-1", session_id, applicants.service.notice(session).notice_id)

    (summary,) = applicants.mine.list("applicant-1").items
    assert summary.consented and summary.updated_at > summary.created_at


def test_given_a_withdrawn_interview_when_listed_then_it_is_gone_at_once(applicants: Applicants) -> None:
    kept, withdrawn = applicants.start("applicant-1", 2)

    applicants.service.withdraw("applicant-1", withdrawn)

    assert listed(applicants.mine.list("applicant-1").items) == [kept]


def test_given_another_applicants_cursor_when_it_comes_back_then_it_is_refused(applicants: Applicants) -> None:
    applicants.start("applicant-1", 2)
    applicants.start("applicant-2", 2)
    theirs = applicants.mine.list("applicant-2", limit=1).next_cursor

    with pytest.raises(InvalidCursor, match="another listing"):
        applicants.mine.list("applicant-1", cursor=theirs)


@pytest.mark.parametrize(
    "cursor",
    [
        "not-a-cursor",
        base64.urlsafe_b64encode(b'{"v":1}').decode().rstrip("="),
        encode_cursor("interviews:applicant-1", {"createdAt": "2026-04-01T09:01:00+00:00"}),
        encode_cursor("interviews:applicant-1", {"createdAt": "2026#1", "sessionId": SESSION}),
        encode_cursor("interviews:applicant-1", {"createdAt": "2026-04-01T09:01:00+00:00", "sessionId": "../x"}),
        encode_cursor("interviews:applicant-1", {"createdAt": 2026, "sessionId": SESSION}),
        encode_cursor("interviews:applicant-1", {"createdAt": "x" * 65, "sessionId": SESSION}),
        encode_cursor("jobs:open", {"createdAt": "2026-04-01T09:01:00+00:00", "sessionId": SESSION}),
    ],
    ids=["garbled", "no position", "no session", "hash in time", "bad id", "number", "too long", "the job list's"],
)
def test_given_a_garbled_or_hand_made_cursor_when_listing_then_it_is_refused(
    applicants: Applicants, cursor: str
) -> None:
    with pytest.raises(InvalidCursor):
        applicants.mine.list("applicant-1", cursor=cursor)


def test_given_a_limit_outside_the_bounds_when_listing_then_it_is_held_to_them(applicants: Applicants) -> None:
    applicants.start("applicant-1", MAX_PAGE + 1)

    assert len(applicants.mine.list("applicant-1", limit=0).items) == 1
    assert len(applicants.mine.list("applicant-1", limit=MAX_PAGE + 50).items) == MAX_PAGE
