"""The chat's request learns the pace its worker learns
(docs/chat-and-templates.md#answers-that-do-not-fit-in-a-request).

The request and the worker are different functions, each with its own container's memory of the
model's pace. After one slow answer the request expects every answer to be slow and hands each to
the worker before any call, so it never sees the pace come back; the worker, which makes them all,
does. With the pace shared, the request's next turn after the worker's fast answers is answered in
the request again. Hand-moved clocks, an in-memory record."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lambda_agents.answered_later import Handover, answer_later
from lambda_agents.chat.pending import answer_times
from lambda_agents.llm import Deadline
from lambda_agents.llm.shared_learning import LearningRecord, SharedLearning, SharedPace
from lambda_agents.llm.speeds import ModelSpeeds, SpeedEstimate
from lambda_agents.llm.types import ResponseTiming

from tests.support.learning_record import MemoryLearningRecord
from tests.support.recording_queue import RecordingQueue

MODEL = "gpt-4o"
PRIOR = SpeedEstimate(first_token_s=1.0, tokens_per_s=60.0)
MAX_TOKENS = 1200


@dataclass
class Clock:
    now: float = 1_000.0

    def __call__(self) -> float:
        return self.now


def shared(record: LearningRecord, speeds: ModelSpeeds, epoch: Clock | None = None) -> SharedLearning:
    if epoch is None:
        return SharedLearning(record, MODEL, (SharedPace(speeds),))
    return SharedLearning(record, MODEL, (SharedPace(speeds, epoch),), clock=epoch)


def answered(speeds: ModelSpeeds, tokens_per_s: float, tokens: int = 1000) -> None:
    speeds.record(MODEL, ResponseTiming(first_token_s=0.8, total_s=0.8 + tokens / tokens_per_s), tokens)


def handover(speeds: ModelSpeeds, learned: SharedLearning | None) -> Handover[object]:
    pace = lambda: speeds.estimate(MODEL, PRIOR)  # noqa: E731
    return Handover(RecordingQueue[object](), pace, answer_times(MAX_TOKENS), learned)


def goes_to_the_worker(turns: Handover[object], clock: Clock) -> bool:
    return answer_later(prefer_later=False, expected_s=turns.expected_s(), deadline=Deadline.after(26.0, clock))


def containers() -> tuple[Clock, Clock, ModelSpeeds, ModelSpeeds]:
    request_clock, worker_clock = Clock(), Clock(50_000.0)  # two containers' monotonic clocks
    request = ModelSpeeds(clock=request_clock)
    worker = ModelSpeeds(clock=worker_clock)
    answered(request, tokens_per_s=8.0)  # the one slow answer, cut in the request
    return request_clock, worker_clock, request, worker


def test_without_the_workers_pace_the_request_hands_every_turn_over_after_one_slow_answer() -> None:
    request_clock, _, request, worker = containers()
    turns = handover(request, None)
    for _ in range(6):
        answered(worker, tokens_per_s=60.0)  # the worker's answers are fast again
        request_clock.now += 30
        assert goes_to_the_worker(turns, request_clock)


def test_with_the_workers_pace_shared_the_request_answers_again_once_the_worker_saw_it_come_back() -> None:
    request_clock, worker_clock, request, worker = containers()
    record, epoch = MemoryLearningRecord(), Clock(1_800_000_000.0)
    turns = handover(request, shared(record, request, epoch))
    publisher = shared(record, worker, epoch)
    assert goes_to_the_worker(turns, request_clock)
    handed = 1
    for _ in range(6):
        answered(worker, tokens_per_s=60.0)
        publisher.publish()
        for clock in (request_clock, worker_clock, epoch):
            clock.now += 30
        if not goes_to_the_worker(turns, request_clock):
            break
        handed += 1
    assert handed < 6  # answered in the request again while the pace is fast
    assert request.estimate(MODEL, PRIOR).tokens_per_s >= 50.0


def test_the_request_reads_the_record_at_most_every_ten_seconds_and_learns_each_reading_once() -> None:
    _, _, request, worker = containers()
    record, epoch = MemoryLearningRecord(), Clock(1_800_000_000.0)
    learner = shared(record, request, epoch)
    answered(worker, tokens_per_s=60.0)
    shared(record, worker, epoch).publish()
    learner.refresh()
    learner.refresh()
    assert record.reads == 1
    epoch.now += 10
    learner.refresh()
    readings = [(at, kind, value) for at, kind, value in record.items[MODEL]["pace"]]
    assert record.reads == 2 and request.merge(MODEL, readings, epoch.now) == 0  # known already


def test_a_record_that_cannot_be_read_or_written_only_loses_the_sharing() -> None:
    class Down(MemoryLearningRecord):
        def read(self, model: str) -> dict[str, Any]:
            raise ConnectionError("DynamoDB unreachable")

        def write(self, model: str, parts: dict[str, Any]) -> None:
            raise ConnectionError("DynamoDB unreachable")

    _, _, request, worker = containers()
    answered(worker, tokens_per_s=60.0)
    shared(Down(), worker).publish()
    shared(Down(), request).refresh()  # neither raises


def test_a_worker_that_learned_nothing_new_writes_nothing_and_the_request_learns_each_reading_once() -> None:
    """A steady state costs no writes: what the worker would publish is what it last wrote, though
    its two clocks (monotonic and epoch) are never read at the same instant."""
    request_clock, worker_clock, request, worker = containers()
    record, epoch = MemoryLearningRecord(), Clock(1_800_000_000.0)
    learner, publisher = shared(record, request, epoch), shared(record, worker, epoch)
    answered(worker, tokens_per_s=60.0)
    publisher.publish()
    learner.refresh()
    for _ in range(3):
        worker_clock.now += 30
        request_clock.now += 30
        epoch.now += 30.0004  # read a little apart from the monotonic clock
        publisher.publish()  # a turn that taught it nothing: a redelivery, an answer without timing
    assert record.writes == 1
    readings = [(at, kind, value) for at, kind, value in worker.readings(MODEL, epoch.now)]
    assert request.merge(MODEL, readings, epoch.now) == 0  # dated as before: known already
    answered(worker, tokens_per_s=55.0)
    publisher.publish()
    assert record.writes == 2
