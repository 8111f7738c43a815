"""The daily fan-out through the Batch API (docs/nudges.md#the-batch-api-path): each cohort's plans for
its next local date made the evening before as batch jobs, at half the synchronous price and from
the Batch API's own quota, so the morning's synchronous fan-out has only the leftovers to make.

One run (NudgeBatchFunction, on a schedule) does three things:
- **Submit.** A zone whose local time is in its submit hour (``submit_hour``, with the catch-up
  window) has its next-day cohort sent as jobs of at most ``max_requests`` users: for each user
  the request the synchronous Commander would send first (``NudgeGenerationService.batch_request``:
  the same strict schema, messages and max_tokens), users who need none (disabled, no slots,
  already made) left out. The cohort is claimed in storage before anything is sent (a conditional
  write), so two runs never pay for the same cohort twice; a run that dies between its claim and
  its job leaves the cohort to the synchronous path.
- **Collect.** A finished job's answers (completed, expired with part of them, or cancelled) are
  each read and stored by the synchronous generator's own code
  (``NudgeGenerationService.store_batch_answer``: validation, slot table, one conditional write).
  An answer that is missing, failed, truncated, refused or invalid stores nothing: the user's
  synchronous run at the generation hour makes their day (or, without a model, the rule-based
  fallback), so nobody is given a broken plan and nothing is stored twice.
- **Cancel late jobs.** A job still running at its cohort's cut-off (an hour before the local
  generation hour) is cancelled; its answers made so far are collected by the next run, before
  the synchronous fan-out starts, and the rest are left to it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from ..llm import ProviderError
from ..llm.batches import MAX_BATCH_REQUESTS, BatchAnswer, BatchItem, BatchModel
from ..observability import logger
from ..timezones import known_timezones
from .due import due_zones
from .generation import GenerationJob, GenerationOutcome, LocalDateOutOfRange, NudgeGenerationService

DEFAULT_SUBMIT_HOUR = 20
CUTOFF_BEFORE_GENERATION = timedelta(hours=1)


class ZoneUsers(Protocol):
    def pages_in_timezone(self, timezone: str) -> Iterator[list[dict[str, Any]]]: ...


@dataclass(frozen=True)
class CohortBatch:
    """One job of a cohort, as stored: ``batch_id`` is None while it is being submitted."""

    zone: str
    local_date: str
    part: int
    cutoff: str  # UTC ISO: cancel the job if it is still running then
    batch_id: str | None = None
    requests: int = 0
    state: str = "claimed"  # claimed | submitted | collected | refused | empty (nobody to ask for)


class CohortBatchStore(Protocol):
    def claim(self, zone: str, local_date: str, cutoff: str) -> bool:
        """Claim the cohort (its part 0); False when a run claimed it before."""
        ...

    def save(self, batch: CohortBatch) -> None: ...

    def open_batches(self, local_dates: Sequence[str]) -> list[CohortBatch]:
        """The submitted jobs of these dates that have not been collected yet."""
        ...


@dataclass
class BatchRun:
    submitted: list[CohortBatch] = field(default_factory=list)
    skipped_users: Counter[str] = field(default_factory=Counter)
    collected: Counter[str] = field(default_factory=Counter)  # per-user outcomes of collected jobs
    unusable: Counter[str] = field(default_factory=Counter)  # why answers were not stored
    cancelled: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (cohort, why) of jobs the provider refused
    still_running: int = 0
    tokens: int = 0  # the answers of the jobs collected: billed (at the Batch API's price) used or not


@dataclass
class PlanBatches:
    generation: NudgeGenerationService
    model: BatchModel
    users: ZoneUsers
    store: CohortBatchStore
    generation_hour: int
    submit_hour: int = DEFAULT_SUBMIT_HOUR
    catch_up_hours: int = 1
    max_requests: int = MAX_BATCH_REQUESTS
    workers: int = 8
    zones: Sequence[str] | None = None

    def run(self, now: datetime, time_left_s: Callable[[], float] = lambda: float("inf")) -> BatchRun:
        """One run: collect what finished, then submit what is due. Answers are stored while
        ``time_left_s()`` (the invocation's remaining time) leaves 10 s; the rest waits for the next run."""
        result = BatchRun()
        self._collect(now, result, time_left_s)
        self._submit(now, result)
        return result

    # -- submit --------------------------------------------------------------------------------

    def _submit(self, now: datetime, result: BatchRun) -> None:
        zones = self.zones if self.zones is not None else known_timezones()
        for due in due_zones(now, self.submit_hour, self.catch_up_hours, zones):
            local_date = (date.fromisoformat(due.local_date) + timedelta(days=1)).isoformat()
            cutoff = self._cutoff(due.timezone, local_date)
            if cutoff <= now or not self.store.claim(due.timezone, local_date, cutoff.isoformat()):
                continue
            requests = self._requests(due.timezone, local_date, result)
            if not requests:
                self.store.save(CohortBatch(due.timezone, local_date, 0, cutoff.isoformat(), state="empty"))
                continue
            for part, start in enumerate(range(0, len(requests), self.max_requests)):
                items = requests[start : start + self.max_requests]
                batch = CohortBatch(due.timezone, local_date, part, cutoff.isoformat(), requests=len(items))
                metadata = {"cohort": f"{due.timezone} {local_date}", "part": str(part)}
                try:
                    status = self.model.submit(items, metadata)
                except ProviderError as error:
                    # Left to the synchronous path; the claim stays, so the job is not tried twice.
                    self.store.save(replace(batch, state="refused"))
                    result.refused.append((metadata["cohort"], str(error)))
                    logger.warning("a batch job could not be submitted", extra={**metadata, "error": str(error)})
                    continue
                state = "refused" if status.state == "failed" else "submitted"
                saved = replace(batch, batch_id=status.batch_id, state=state)
                self.store.save(saved)
                if state == "refused":
                    result.refused.append((metadata["cohort"], "; ".join(status.errors)))
                else:
                    result.submitted.append(saved)

    def _cutoff(self, zone: str, local_date: str) -> datetime:
        """When the cohort's synchronous fan-out needs the job's answers collected."""
        generation = datetime.combine(date.fromisoformat(local_date), time(self.generation_hour), ZoneInfo(zone))
        return (generation - CUTOFF_BEFORE_GENERATION).astimezone(UTC)

    def _requests(self, zone: str, local_date: str, result: BatchRun) -> list[BatchItem]:
        user_ids = [str(item["userId"]) for page in self.users.pages_in_timezone(zone) for item in page]

        def request(user_id: str) -> BatchItem | str:
            try:
                made = self.generation.batch_request(GenerationJob(userId=user_id, localDate=local_date))
            except LocalDateOutOfRange:
                return "skipped_out_of_range"
            if isinstance(made, GenerationOutcome):
                return made.status
            return BatchItem(user_id, made)

        items: list[BatchItem] = []
        with ThreadPoolExecutor(self.workers) as pool:
            for made in pool.map(request, user_ids):
                if isinstance(made, str):
                    result.skipped_users[made] += 1
                else:
                    items.append(made)
        return items

    # -- collect -------------------------------------------------------------------------------

    def _collect(self, now: datetime, result: BatchRun, time_left_s: Callable[[], float]) -> None:
        today = now.date()
        dates = [(today + timedelta(days=offset)).isoformat() for offset in (-1, 0, 1, 2)]
        for batch in self.store.open_batches(dates):
            if batch.batch_id is None:
                continue
            status = self.model.status(batch.batch_id)
            if not status.finished:
                if datetime.fromisoformat(batch.cutoff) <= now and status.state != "cancelling":
                    self.model.cancel(batch.batch_id)
                    result.cancelled.append(batch.batch_id)
                result.still_running += 1
                continue
            if status.state == "failed":
                result.refused.append((f"{batch.zone} {batch.local_date}", "; ".join(status.errors)))
                self.store.save(replace(batch, state="refused"))
                continue
            answers = self.model.answers(batch.batch_id)
            if not self._store_answers(batch, answers, result, time_left_s):
                return  # out of time: this job stays open for the next run (what is stored stays)
            self.store.save(replace(batch, state="collected"))
            # Counted once, with the job: a job left open is read again by the next run.
            result.tokens += sum(a.response.usage.total_tokens for a in answers if a.response is not None)

    def _store_answers(
        self, batch: CohortBatch, answers: list[BatchAnswer], result: BatchRun, time_left_s: Callable[[], float]
    ) -> bool:
        def store(answer: BatchAnswer) -> tuple[str, str | None]:
            if answer.response is None:
                return "answer_missing", (answer.error or "no answer").split(":", 1)[0]
            if time_left_s() < 10.0:
                return "out_of_time", None
            job = GenerationJob(userId=answer.custom_id, localDate=batch.local_date)
            try:
                outcome = self.generation.store_batch_answer(job, answer.response)
            except LocalDateOutOfRange:
                return "skipped_out_of_range", None
            return outcome.status, outcome.fallback_reason

        finished = True
        with ThreadPoolExecutor(self.workers) as pool:
            for status, reason in pool.map(store, [a for a in answers if a.custom_id]):
                if status == "out_of_time":
                    finished = False
                    continue
                result.collected[status] += 1
                if status in ("answer_missing", "answer_unusable"):
                    result.unusable[str(reason)] += 1
        return finished
