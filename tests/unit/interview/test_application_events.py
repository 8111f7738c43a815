"""Application events: published after the commit, never lost when the bus fails (they stay in
the outbox for the relay), a duplicate only with the same eventId."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import pytest
from lambda_agents.interview.interview_log import RecordingLog
from lambda_agents.interview.rules.application_events import ApplicationEvent, ApplicationEventDelivery, PublishFailed

NOW = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)


def event(application_id: str, status: str = "completed", version: int = 5) -> ApplicationEvent:
    return ApplicationEvent(application_id, "job-1", 2, status, version, NOW.isoformat())  # type: ignore[arg-type]


class Bus:
    def __init__(self, *, down: bool = False, refuse: Sequence[str] = ()) -> None:
        self.down = down
        self.refuse = set(refuse)
        self.received: list[dict[str, object]] = []

    def publish(self, events: Sequence[ApplicationEvent]) -> list[str]:
        if self.down:
            raise PublishFailed("EndpointConnectionError")
        accepted = [e for e in events if e.application_id not in self.refuse]
        self.received += [{"detailType": e.detail_type, **e.detail()} for e in accepted]
        return [e.event_id for e in accepted]


class Outbox:
    def __init__(self, *events: ApplicationEvent, broken: bool = False) -> None:
        self.events = list(events)
        self.broken = broken

    def pending(self, written_before: datetime, limit: int) -> list[ApplicationEvent]:
        return self.events[:limit]

    def delivered(self, events: Sequence[ApplicationEvent]) -> None:
        if self.broken:
            raise RuntimeError("throttled")
        gone = {e.event_id for e in events}
        self.events = [e for e in self.events if e.event_id not in gone]


def test_an_event_carries_ids_and_the_status_only_never_the_applicants_answers() -> None:
    detail = event("a" * 32).detail()
    assert detail == {
        "eventId": f"{'a' * 32}:5:completed",
        "applicationId": "a" * 32,
        "jobId": "job-1",
        "jobVersion": 2,
        "status": "completed",
        "occurredAt": NOW.isoformat(),
    }
    assert event("a", "audit_failed").detail_type == "Application Audit Failed"


def test_a_published_event_leaves_the_outbox() -> None:
    outbox, bus = Outbox(event("a")), Bus()
    assert ApplicationEventDelivery(bus, outbox, RecordingLog()).deliver([event("a")]) == 1
    assert outbox.events == [] and [r["eventId"] for r in bus.received] == ["a:5:completed"]


def test_when_the_bus_is_down_the_event_stays_for_the_relay_and_the_turn_does_not_fail() -> None:
    outbox, log = Outbox(event("a")), RecordingLog()
    assert ApplicationEventDelivery(Bus(down=True), outbox, log).deliver([event("a")]) == 0
    assert [e.event_id for e in outbox.events] == ["a:5:completed"]
    assert any("deferred" in message for message in log.messages("warn"))

    bus = Bus()
    report = ApplicationEventDelivery(bus, outbox, RecordingLog()).relay(NOW)
    assert (report.pending, report.delivered, outbox.events) == (1, 1, [])
    assert [r["eventId"] for r in bus.received] == ["a:5:completed"]


def test_an_entry_the_bus_refuses_stays_while_the_others_are_published() -> None:
    outbox = Outbox(event("a"), event("b"))
    delivered = ApplicationEventDelivery(Bus(refuse=["b"]), outbox, RecordingLog()).deliver([event("a"), event("b")])
    assert delivered == 1 and [e.application_id for e in outbox.events] == ["b"]


def test_a_failed_outbox_delete_after_publishing_means_a_later_duplicate_with_the_same_event_id() -> None:
    outbox, bus = Outbox(event("a"), broken=True), Bus()
    ApplicationEventDelivery(bus, outbox, RecordingLog()).deliver([event("a")])
    outbox.broken = False
    ApplicationEventDelivery(bus, outbox, RecordingLog()).relay(NOW)
    assert [r["eventId"] for r in bus.received] == ["a:5:completed", "a:5:completed"]


def test_the_relay_fails_visibly_while_the_bus_is_down_and_keeps_the_events() -> None:
    outbox = Outbox(event("a"))
    with pytest.raises(PublishFailed):
        ApplicationEventDelivery(Bus(down=True), outbox, RecordingLog()).relay(NOW)
    assert len(outbox.events) == 1
