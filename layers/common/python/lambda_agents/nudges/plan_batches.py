"""The daily fan-out through the Batch API (docs/nudges.md#the-batch-api-path): each cohort's plans for
its next local date made the evening before as batch jobs, at half the synchronous price and from
the Batch API's own quota, so the morning's synchronous fan-out has only the leftovers to make.

One run (NudgeBatchFunction, on a schedule) does three things, submitting first: a cohort due this
evening cannot wait for the next run, a finished job can.
- **Submit.** A zone whose local time is in its submit hour (``submit_hour``, with the catch-up
  window) has its next-day cohort sent as jobs within the provider's limits (``max_requests``
  users and ``MAX_BATCH_BYTES`` of file each): for each user the request the synchronous
  Commander would send first (``NudgeGenerationService.batch_request``: the same strict schema,
  messages and max_tokens), users who need none (disabled, no slots, already made) left out. The
  cohort is claimed in storage before anything is sent (a conditional write), so two runs never
  send the same cohort twice, and every part is recorded with the claim's tag before its job is
  sent. A job is tagged with that claim in its metadata: when a create call's answer is lost (a
  timeout, a 5xx after the provider accepted it), the job is looked up by its tag at once and in
  every later run, then collected or cancelled like any other, so a cohort is never paid for twice.
- **Through the model chain.** A part's job goes to the first model of the chain (``BatchChain``,
  the synchronous chain's models that have a batch endpoint) whose breaker lets it through and whose
  provider accepts it; a refusal that surely made no job (a 4xx, a failed upload, a job failed at
  once) passes it to the next model. The model is on record before its job is sent, so the job's
  status, answers, cancel and a lost job's look-up go to that model in every later run, and at most
  one model ever holds a job for a part.
- **Collect.** A finished job's answers (completed, expired with part of them, or cancelled) are
  read as they arrive and each stored by the synchronous generator's own code
  (``NudgeGenerationService.store_batch_answer``: validation, slot table, one conditional write).
  An answer that is missing, failed, truncated, refused or invalid stores nothing: the user's
  synchronous run at the generation hour makes their day (or, without a model, the rule-based
  fallback), so nobody is given a broken plan and nothing is stored twice.
- **Cancel late jobs.** A job still ``in_progress`` at its cohort's cut-off (an hour before the
  local generation hour) is cancelled; its answers made so far are collected by a later run,
  before the synchronous fan-out starts, and the rest are left to it. Cancel is documented for
  in-progress jobs only: a ``validating`` job is left to start (and is cancelled then), a
  ``finalizing`` one has done its work and is waited for.

Each job's trouble is its own: a provider error on one job's status, cancel or answers call (or a
failed look-up) is logged and counted in ``BatchRun.job_errors`` (metric and alarm in the handler),
the job is tried again next run, and every other job and cohort goes on.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Protocol

from ..llm import ProviderError
from ..llm.accounting import batch_cost_usd
from ..llm.batch_chain import BatchChain, BatchLink
from ..llm.batches import (
    MAX_BATCH_BYTES,
    MAX_BATCH_REQUESTS,
    BatchAnswer,
    BatchItem,
    BatchJobStatus,
    BatchModel,
    SubmitUnconfirmed,
)
from ..llm.errors import RequestRejected
from ..observability import logger
from ..timezones import known_timezones
from ..timezones import zone as tz_zone
from .bounded_map import map_bounded
from .due import due_zones
from .generation import GenerationJob, GenerationOutcome, LocalDateOutOfRange, NudgeGenerationService

DEFAULT_SUBMIT_HOUR = 20
CUTOFF_BEFORE_GENERATION = timedelta(hours=1)
# How much earlier than the claim a lost job's creation may read on the provider's clock.
CLOCK_SLACK = timedelta(hours=1)
# A run stops storing answers when this little of its time is left; the next run goes on.
TIME_RESERVE_S = 10.0


class ZoneUsers(Protocol):
    def pages_in_timezone(self, timezone: str) -> Iterator[list[dict[str, Any]]]: ...


@dataclass(frozen=True)
class CohortBatch:
    """One job of a cohort, as stored: ``batch_id`` is None until the provider has confirmed the
    job (its create answer, or a look-up by ``claim``, the tag the job carries in its metadata)."""

    zone: str
    local_date: str
    part: int
    cutoff: str  # UTC ISO: cancel the job if it is still running then
    batch_id: str | None = None
    requests: int = 0
    state: str = "claimed"  # claimed | submitted | collected | refused | empty (nobody to ask for)
    claim: str | None = None  # the claiming run's tag, in each of the cohort's jobs' metadata
    claimed_at: str | None = None  # UTC ISO: when the cohort was claimed
    # The model of the chain the job was sent to (None: the first), on record before it is sent:
    # where its status, answers and cancel go, and where a job whose create answer was lost is looked for.
    model: str | None = None

    @property
    def label(self) -> str:
        return f"{self.zone} {self.local_date} part {self.part}"


class CohortBatchStore(Protocol):
    def claim(self, batch: CohortBatch) -> bool:
        """Write the cohort's part 0 unless a run claimed the cohort before (then False)."""
        ...

    def save(self, batch: CohortBatch) -> None: ...

    def open_batches(self, local_dates: Sequence[str]) -> list[CohortBatch]:
        """The jobs of these dates not settled yet: ``submitted`` ones, and ``claimed`` ones (a job
        may have been sent whose answer never came)."""
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
    # (job or cohort part, why) of each provider call that failed this run; each is tried again next run
    job_errors: list[tuple[str, str]] = field(default_factory=list)
    recovered: list[CohortBatch] = field(default_factory=list)  # jobs found by their claim's tag
    # (cohort part, model, why) of each model of the chain that did not take a job, the next one tried
    passed_on: list[tuple[str, str, str]] = field(default_factory=list)
    unconfirmed: int = 0  # claimed parts whose job is not found (yet, or never sent)
    tokens: int = 0  # the answers of the jobs collected: billed (at the Batch API's price) used or not
    cost_usd: float = 0.0  # what they cost at the price table's Batch prices (a model without a price: nothing)


@dataclass
class PlanBatches:
    """``model``: one model's Batch API, or the model chain's (``BatchChain``): a job goes to the
    first model of the chain that takes it (docs/nudges.md#the-batch-api-path-through-the-model-chain)."""

    generation: NudgeGenerationService
    model: BatchModel | BatchChain
    users: ZoneUsers
    store: CohortBatchStore
    generation_hour: int
    submit_hour: int = DEFAULT_SUBMIT_HOUR
    catch_up_hours: int = 1
    max_requests: int = MAX_BATCH_REQUESTS
    workers: int = 8
    zones: Sequence[str] | None = None
    _chain: BatchChain = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._chain = self.model if isinstance(self.model, BatchChain) else BatchChain([BatchLink(self.model)])

    def run(self, now: datetime, time_left_s: Callable[[], float] = lambda: float("inf")) -> BatchRun:
        """One run: submit what is due, then collect what finished. Answers are stored while
        ``time_left_s()`` (the invocation's remaining time) leaves ``TIME_RESERVE_S``; the rest
        waits for the next run."""
        result = BatchRun()
        handled = self._submit(now, result)
        self._collect(now, result, time_left_s, handled)
        return result

    # -- submit --------------------------------------------------------------------------------

    def _submit(self, now: datetime, result: BatchRun) -> set[tuple[str, str, int]]:
        """Send every due cohort; returns the parts this run dealt with (not to be looked at again)."""
        handled: set[tuple[str, str, int]] = set()
        zones = self.zones if self.zones is not None else known_timezones()
        for due in due_zones(now, self.submit_hour, self.catch_up_hours, zones):
            local_date = (date.fromisoformat(due.local_date) + timedelta(days=1)).isoformat()
            cutoff = self._cutoff(due.timezone, local_date)
            claim = CohortBatch(
                due.timezone, local_date, 0, cutoff.isoformat(), claim=uuid.uuid4().hex, claimed_at=now.isoformat()
            )
            if cutoff <= now or not self.store.claim(claim):
                continue
            requests = self._requests(due.timezone, local_date, result)
            if not requests:
                self.store.save(replace(claim, state="empty"))
                continue
            parts = self._parts(requests)
            batches = [replace(claim, part=number, requests=len(items)) for number, items in enumerate(parts)]
            for batch in batches:  # every part on record, with its tag, before any job is sent
                self.store.save(batch)
            for batch, items in zip(batches, parts, strict=True):
                handled.add((batch.zone, batch.local_date, batch.part))
                self._send(batch, items, result)
        return handled

    def _send(self, batch: CohortBatch, items: Sequence[BatchItem], result: BatchRun) -> None:
        """The part's job at the first model of the chain that takes it. Each model is put on record
        before its job is sent; only a refusal that surely made no job moves the part on, so at most
        one model ever holds a job for it (never a cohort paid for twice)."""
        cohort = f"{batch.zone} {batch.local_date}"
        metadata = {"cohort": cohort, "part": str(batch.part), "claim": str(batch.claim)}
        refusals: list[str] = []
        for link in self._chain.links:
            name = link.model.model_name
            if link.breaker is not None and not link.breaker.allows():
                refusals.append(f"{name}: resting after repeated failures")
                continue
            at_link = replace(batch, model=name)
            self.store.save(at_link)
            try:
                status = link.model.submit(items, metadata)
            except SubmitUnconfirmed as error:
                # The provider may be running (and billing) the job: find it at this model rather
                # than send the users to another.
                if link.breaker is not None:
                    link.breaker.failed(error)
                result.job_errors.append((batch.label, str(error)))
                logger.warning(
                    "a batch job's create answer was lost; looking it up",
                    extra={**metadata, "model": name, "error": str(error)},
                )
                result.submitted.extend(self._recover([at_link], result))
                return
            except ProviderError as error:
                # Refused: no job exists at this model; the next one may take it.
                if link.breaker is not None:
                    link.breaker.failed(error)
                refusals.append(f"{name}: {error}")
                self._passed_on(at_link, name, str(error), result)
                continue
            except ValueError as error:
                # Over the provider's limits (nothing was sent): no model takes it; left to the
                # synchronous path. A breaker's trial this call held is given back, not counted.
                if link.breaker is not None:
                    link.breaker.failed(RequestRejected(f"not sent: {error}"))
                refusals.append(f"{name}: {error}")
                self.store.save(replace(at_link, state="refused"))
                break
            if link.breaker is not None:
                link.breaker.succeeded()
            if status.state == "failed":  # refused at once: no job runs, nothing is billed
                why = "; ".join(status.errors) or "failed"
                refusals.append(f"{name}: {why}")
                self._passed_on(at_link, name, why, result)
                continue
            saved = replace(at_link, batch_id=status.batch_id, state="submitted")
            self.store.save(saved)
            result.submitted.append(saved)
            return
        else:
            # No model took it: left to the synchronous path; the claim stays, so it is not sent twice.
            self.store.save(replace(batch, state="refused"))
        result.refused.append((cohort, "; ".join(refusals)))
        logger.warning("a batch job could not be submitted", extra={**metadata, "why": "; ".join(refusals)})

    def _passed_on(self, batch: CohortBatch, model: str, why: str, result: BatchRun) -> None:
        result.passed_on.append((batch.label, model, why))
        logger.warning(
            "a model refused a batch job; the next model of the chain is tried",
            extra={"part": batch.label, "model": model, "error": why},
        )

    def _parts(self, requests: Sequence[BatchItem]) -> list[list[BatchItem]]:
        """The cohort as jobs within the provider's limits: ``max_requests`` users and
        ``MAX_BATCH_BYTES`` of input file each (a 50,000-user cohort's file can be larger)."""
        parts: list[list[BatchItem]] = []
        current: list[BatchItem] = []
        size = 0
        for item in requests:
            line = self._chain.request_bytes(item)
            if current and (len(current) >= self.max_requests or size + line > MAX_BATCH_BYTES):
                parts.append(current)
                current, size = [], 0
            current.append(item)
            size += line
        if current:
            parts.append(current)
        return parts

    def _cutoff(self, zone: str, local_date: str) -> datetime:
        """When the cohort's synchronous fan-out needs the job's answers collected."""
        generation = datetime.combine(date.fromisoformat(local_date), time(self.generation_hour), tz_zone(zone))
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

    # -- recover -------------------------------------------------------------------------------

    def _recover(self, claimed: Sequence[CohortBatch], result: BatchRun) -> list[CohortBatch]:
        """Claimed parts' jobs found by their tag in the list of the model each part is on record
        at, saved as submitted; the parts not found stay claimed and are looked up again next run."""
        found: list[CohortBatch] = []
        by_model: dict[str | None, list[CohortBatch]] = {}
        for batch in claimed:
            by_model.setdefault(batch.model, []).append(batch)
        for model, parts in by_model.items():
            found += self._recover_at(model, parts, result)
        return found

    def _recover_at(self, model: str | None, claimed: Sequence[CohortBatch], result: BatchRun) -> list[CohortBatch]:
        since = min(datetime.fromisoformat(str(batch.claimed_at)) for batch in claimed) - CLOCK_SLACK
        try:
            jobs = self._chain.at(model).jobs_since(int(since.timestamp()))
        except ProviderError as error:
            result.job_errors.append((f"the batch list of {model or self._chain.model_name}", str(error)))
            result.unconfirmed += len(claimed)
            logger.warning(
                "the batch list could not be read; claims are looked up next run",
                extra={"model": model, "error": str(error)},
            )
            return []
        by_tag: dict[tuple[str, str], BatchJobStatus] = {}
        for job in jobs:
            by_tag.setdefault((job.metadata.get("claim", ""), job.metadata.get("part", "")), job)
        found: list[CohortBatch] = []
        for batch in claimed:
            tagged = by_tag.get((str(batch.claim), str(batch.part)))
            if tagged is None:
                result.unconfirmed += 1
                continue
            saved = replace(batch, batch_id=tagged.batch_id, state="submitted")
            self.store.save(saved)
            result.recovered.append(saved)
            found.append(saved)
            logger.info("a batch job was found by its claim", extra={"part": batch.label, "batchId": tagged.batch_id})
        return found

    # -- collect -------------------------------------------------------------------------------

    def _collect(
        self, now: datetime, result: BatchRun, time_left_s: Callable[[], float], handled: set[tuple[str, str, int]]
    ) -> None:
        today = now.date()
        dates = [(today + timedelta(days=offset)).isoformat() for offset in (-1, 0, 1, 2)]
        open_batches = [
            batch
            for batch in self.store.open_batches(dates)
            if (batch.zone, batch.local_date, batch.part) not in handled
        ]
        jobs = [batch for batch in open_batches if batch.batch_id is not None]
        claimed = [b for b in open_batches if b.batch_id is None and b.claim is not None and b.claimed_at is not None]
        if claimed:
            jobs += self._recover(claimed, result)
        for batch in jobs:
            try:
                if not self._collect_job(batch, now, result, time_left_s):
                    return  # out of time: this job stays open for the next run (what is stored stays)
            except ProviderError as error:
                result.job_errors.append((str(batch.batch_id), str(error)))
                logger.warning(
                    "a batch job's provider call failed; it is tried again next run",
                    extra={"batchId": batch.batch_id, "part": batch.label, "error": str(error)},
                )

    def _collect_job(
        self, batch: CohortBatch, now: datetime, result: BatchRun, time_left_s: Callable[[], float]
    ) -> bool:
        """One job: cancel it if late, collect it if finished. False when the run ran out of time."""
        batch_id = str(batch.batch_id)
        model = self._chain.at(batch.model)
        status = model.status(batch_id)
        if status.state == "in_progress" and datetime.fromisoformat(batch.cutoff) <= now:
            status = self._cancel(model, batch_id, result)
        if not status.finished:
            result.still_running += 1
            return True
        if status.state == "failed":
            result.refused.append((f"{batch.zone} {batch.local_date}", "; ".join(status.errors)))
            self.store.save(replace(batch, state="refused"))
            return True
        answers = model.answers(batch_id)
        try:
            finished = self._store_answers(batch, answers, result, time_left_s)
        finally:
            close = getattr(answers, "close", None)
            if close is not None:
                close()  # stops the download when the run stopped early
        if finished:
            self.store.save(replace(batch, state="collected"))
        return finished

    def _cancel(self, model: BatchModel, batch_id: str, result: BatchRun) -> BatchJobStatus:
        """Cancel a late in-progress job. A refused cancel is read again: a job that moved on in
        between (finalizing, or done) is waited for or collected, not an error."""
        try:
            cancelling = model.cancel(batch_id)
        except ProviderError:
            status = model.status(batch_id)
            if status.state == "in_progress":
                raise
            logger.info("a late job moved on before its cancel", extra={"batchId": batch_id, "state": status.state})
            return status
        result.cancelled.append(batch_id)
        return cancelling

    def _store_answers(
        self, batch: CohortBatch, answers: Iterable[BatchAnswer], result: BatchRun, time_left_s: Callable[[], float]
    ) -> bool:
        def store(answer: BatchAnswer) -> tuple[str, str | None]:
            if answer.response is None:
                return "answer_missing", (answer.error or "no answer").split(":", 1)[0]
            if time_left_s() < TIME_RESERVE_S:
                return "out_of_time", None
            job = GenerationJob(userId=answer.custom_id, localDate=batch.local_date)
            try:
                outcome = self.generation.store_batch_answer(job, answer.response)
            except LocalDateOutOfRange:
                return "skipped_out_of_range", None
            return outcome.status, outcome.fallback_reason

        billed, billed_usd = 0, 0.0

        def counted(stream: Iterable[BatchAnswer]) -> Iterator[BatchAnswer]:
            nonlocal billed, billed_usd
            for answer in stream:
                if answer.response is not None:
                    billed += answer.response.usage.total_tokens
                    billed_usd += batch_cost_usd(answer.response)
                if answer.custom_id:
                    yield answer

        with closing(map_bounded(store, counted(answers), self.workers)) as outcomes:
            for status, reason in outcomes:
                if status == "out_of_time":
                    return False
                result.collected[status] += 1
                if status in ("answer_missing", "answer_unusable"):
                    result.unusable[str(reason)] += 1
        # Counted once, when the job is collected whole: a job left open is read again by the next run.
        result.tokens += billed
        result.cost_usd += billed_usd
        return True
