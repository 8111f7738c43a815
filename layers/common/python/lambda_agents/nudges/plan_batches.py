"""The daily fan-out through the Batch API (docs/nudges.md#the-batch-api-path): each cohort's plans for
its next local date made the evening before as batch jobs, at half the synchronous price and from
the Batch API's own quota, so the morning's synchronous fan-out has only the leftovers to make.

One run (NudgeBatchFunction, on a schedule) does three things, submitting first: a cohort due this
evening cannot wait for the next run, a finished job can.
- **Submit.** A zone whose local time is in its submit hour (``submit_hour``, with the catch-up
  window) has its next-day cohort sent as jobs within the provider's limits (``max_requests``
  users and ``MAX_BATCH_BYTES`` of file each): for each user the request the synchronous
  Commander would send first (``NudgeGenerationService.batch_request``: the same strict schema,
  messages and max_tokens), users who need none (disabled, no slots, already made) left out, as
  is a user whose records cannot be read (a storage error: ``storage_failed``), each
  line named by the cohort's request id for its user (``batch_answers.request_id``). The cohort is
  claimed in storage before anything is sent (a conditional write), so two runs never send the
  same cohort twice, and every part is recorded with the claim's tag and its users' range before
  its job is sent. A job is tagged with that claim, its part and its model in its metadata: when a
  create call's answer is lost (a timeout, a 5xx after the provider accepted it), the job is looked
  up by its tag at once and in every later run, then collected or cancelled like any other, so a
  cohort is never paid for twice.
- **Through the model chain.** A part's job goes to the first model of the chain (``BatchChain``,
  the synchronous chain's models that have a batch endpoint) whose breaker lets it through and whose
  provider accepts it; a refusal that surely made no job (a 4xx, a failed upload, a job failed at
  once) passes it to the next model. A job that fails later for the provider's queue quota (OpenAI's
  ``token_limit_exceeded``) is moved on too: its part's users are asked again of the next model, or,
  with none left, left to the synchronous path. The model is on record before its job is sent, so
  the job's status, answers, cancel and a lost job's look-up go to that model in every later run.
- **Collect.** A finished job's answers (completed, expired with part of them, or cancelled) are
  read as they arrive and each stored by the synchronous generator's own code (``batch_answers``):
  only lines that answer the cohort's own requests, each once. An answer that is missing, failed,
  truncated, refused or invalid stores nothing: the user's synchronous run at the generation hour
  makes their day (or, without a model, the rule-based fallback).
- **Cancel late jobs.** A job still ``in_progress`` at its cohort's cut-off (an hour before the
  local generation hour) is cancelled; its answers made so far are collected by a later run,
  before the synchronous fan-out starts, and the rest are left to it. Cancel is documented for
  in-progress jobs only: a ``validating`` job is left to start (and is cancelled then), a
  ``finalizing`` one has done its work and is waited for.

Each job's trouble is its own: a provider error on one job's status, cancel or answers call (or a
failed look-up), or a storage error on one cohort, part, job or answer, is logged and counted in
``BatchRun.job_errors`` (metric and alarm in the handler), and every other job and cohort goes on. A
part's or job's call is tried again next run; a cohort whose claim or parts could not be recorded
before any job was sent stays claimed (never sent twice) and its users go to the synchronous path.
Runs may overlap: every change of a record is conditional on the state the run read
(``cohort_batches``), so a job is collected, and its tokens counted, by one run only.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Protocol

from ..llm import ProviderError
from ..llm.batch_chain import BatchChain, BatchLink
from ..llm.batches import MAX_BATCH_BYTES, MAX_BATCH_REQUESTS, BatchItem, BatchJobStatus, BatchModel, SubmitUnconfirmed
from ..llm.errors import RequestRejected
from ..observability import logger
from ..timezones import known_timezones
from ..timezones import zone as tz_zone
from .batch_answers import STORAGE_FAILED, AnswerReader, key_between, request_id, request_key, requested_user
from .cohort_batches import BatchRun, CohortBatch, CohortBatchStore
from .due import due_zones
from .generation import GenerationJob, GenerationOutcome, LocalDateOutOfRange, NudgeGenerationService

DEFAULT_SUBMIT_HOUR = 20
CUTOFF_BEFORE_GENERATION = timedelta(hours=1)
# How much earlier than the claim a lost job's creation may read on the provider's clock.
CLOCK_SLACK = timedelta(hours=1)


class ZoneUsers(Protocol):
    def pages_in_timezone(self, timezone: str) -> Iterator[list[dict[str, Any]]]: ...


@dataclass
class PlanBatches:
    """``model``: one model's Batch API, or the model chain's (``BatchChain``): a job goes to the
    first model of the chain that takes it (docs/nudges.md#the-batch-api-path-through-the-model-chain).
    ``storage_errors``: the storage adapters' failure types, each one job's trouble (passed in by
    the composition root: the domain imports no storage)."""

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
    storage_errors: tuple[type[Exception], ...] = ()
    _chain: BatchChain = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._chain = self.model if isinstance(self.model, BatchChain) else BatchChain([BatchLink(self.model)])

    def run(self, now: datetime, time_left_s: Callable[[], float] = lambda: float("inf")) -> BatchRun:
        """One run: submit what is due, then collect what finished. Answers are stored while
        ``time_left_s()`` (the invocation's remaining time) leaves ``batch_answers.TIME_RESERVE_S``; the rest
        waits for the next run."""
        result = BatchRun()
        handled = self._submit(now, result)
        self._collect(now, result, time_left_s, handled)
        return result

    def _trouble(self, what: str, error: Exception, result: BatchRun, **extra: object) -> None:
        """One job's, part's or cohort's failed call: counted and logged; the run goes on."""
        result.job_errors.append((what, str(error)))
        logger.warning("a batch call failed; the run goes on", extra={"job": what, "error": str(error), **extra})

    # -- submit --------------------------------------------------------------------------------

    def _submit(self, now: datetime, result: BatchRun) -> set[tuple[str, str, int]]:
        """Send every due cohort; returns the parts this run dealt with (not to be looked at again)."""
        handled: set[tuple[str, str, int]] = set()
        zones = self.zones if self.zones is not None else known_timezones()
        for due in due_zones(now, self.submit_hour, self.catch_up_hours, zones):
            local_date = (date.fromisoformat(due.local_date) + timedelta(days=1)).isoformat()
            try:
                self._submit_cohort(due.timezone, local_date, now, result, handled)
            except self.storage_errors as error:
                self._trouble(f"{due.timezone} {local_date}", error, result)
        return handled

    def _submit_cohort(
        self, zone: str, local_date: str, now: datetime, result: BatchRun, handled: set[tuple[str, str, int]]
    ) -> None:
        cutoff = self._cutoff(zone, local_date)
        claim = CohortBatch(
            zone, local_date, 0, cutoff.isoformat(), claim=uuid.uuid4().hex, claimed_at=now.isoformat(), signed_ids=True
        )
        if cutoff <= now or not self.store.claim(claim):
            return
        requests = self._requests(claim, result)
        if not requests:
            self.store.change(replace(claim, state="empty"), was="claimed")
            return
        parts = self._parts(requests)
        keys = [[request_key(str(claim.claim), requested_user(item.custom_id)) for item in items] for items in parts]
        bounds = ["", *(key_between(keys[n - 1][-1], keys[n][0]) for n in range(1, len(parts))), ""]
        batches = [
            replace(claim, part=n, requests=len(items), keys_from=bounds[n], keys_below=bounds[n + 1])
            for n, items in enumerate(parts)
        ]
        self.store.change(batches[0], was="claimed")  # every part on record, with its tag, before any job is sent
        for batch in batches[1:]:
            self.store.save(batch)
        for batch, items in zip(batches, parts, strict=True):
            handled.add((batch.zone, batch.local_date, batch.part))
            try:
                self._send(batch, items, result, self._chain.links)
            except self.storage_errors as error:
                self._trouble(batch.label, error, result)

    def _send(
        self,
        batch: CohortBatch,
        items: Sequence[BatchItem],
        result: BatchRun,
        links: Sequence[BatchLink],
        refused_before: Sequence[str] = (),
    ) -> None:
        """The part's job at the first of ``links`` that takes it. Each model is put on record
        before its job is sent; only a refusal that surely made no job moves the part on, so at most
        one model ever holds a live job for it (never a cohort paid for twice). ``refused_before``:
        why the models before ``links`` did not take it."""
        cohort = f"{batch.zone} {batch.local_date}"
        refusals = list(refused_before)
        for link in links:
            name = link.model.model_name
            if link.breaker is not None and not link.breaker.allows():
                refusals.append(f"{name}: resting after repeated failures")
                continue
            at_link = replace(batch, model=name)
            if not self.store.change(at_link, was="claimed"):
                return  # another run moved the part: it is that run's
            batch = at_link
            metadata = {"cohort": cohort, "part": str(batch.part), "claim": str(batch.claim), "model": name}
            try:
                status = link.model.submit(items, metadata)
            except SubmitUnconfirmed as error:
                # The provider may be running (and billing) the job: find it at this model rather
                # than send the users to another.
                if link.breaker is not None:
                    link.breaker.failed(error)
                self._trouble(batch.label, error, result, model=name)
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
                break
            if link.breaker is not None:
                link.breaker.succeeded()
            if status.state == "failed":  # refused at once: no job runs, nothing is billed
                why = "; ".join(status.errors) or "failed"
                refusals.append(f"{name}: {why}")
                self._passed_on(at_link, name, why, result)
                continue
            saved = replace(at_link, batch_id=status.batch_id, state="submitted")
            self.store.change(saved, was="claimed")  # lost to a run that found it by its tag: the same job
            result.submitted.append(saved)
            return
        # No model took it: left to the synchronous path; the claim stays, so it is not sent twice.
        self.store.change(replace(batch, state="refused"), was="claimed")
        result.refused.append((cohort, "; ".join(refusals)))
        logger.warning("a batch job could not be submitted", extra={"part": batch.label, "why": "; ".join(refusals)})

    def _passed_on(self, batch: CohortBatch, model: str, why: str, result: BatchRun) -> None:
        result.passed_on.append((batch.label, model, why))
        logger.warning(
            "a model did not take a batch job; the next model of the chain is tried",
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

    def _requests(self, batch: CohortBatch, result: BatchRun, *, part_only: bool = False) -> list[BatchItem]:
        """The cohort's requests in request key order (a part is a range of keys), each named by
        the cohort's request id for its user; ``part_only``: those of ``batch``'s range."""
        claim = str(batch.claim)
        keyed = sorted(
            (request_key(claim, str(item["userId"])), str(item["userId"]))
            for page in self.users.pages_in_timezone(batch.zone)
            for item in page
        )
        if part_only:
            low, high = str(batch.keys_from), str(batch.keys_below)
            keyed = [(key, user) for key, user in keyed if key >= low and (not high or key < high)]
        user_ids = [user_id for _, user_id in keyed]

        def request(user_id: str) -> BatchItem | str:
            try:
                made = self.generation.batch_request(GenerationJob(userId=user_id, localDate=batch.local_date))
            except LocalDateOutOfRange:
                return "skipped_out_of_range"
            except self.storage_errors as error:
                # The user's own trouble: left to the synchronous path, the cohort's others sent.
                logger.warning(
                    "a user's batch request could not be made; the synchronous path makes their day",
                    extra={"part": batch.label, "error": str(error)},
                )
                return STORAGE_FAILED
            if isinstance(made, GenerationOutcome):
                return made.status
            return BatchItem(request_id(claim, user_id), made)

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
            link = self._chain.at(model)
            jobs = link.jobs_since(int(since.timestamp()))
        except ProviderError as error:
            self._trouble(f"the batch list of {model or self._chain.model_name}", error, result, model=model)
            result.unconfirmed += len(claimed)
            return []
        by_tag: dict[tuple[str, str, str], BatchJobStatus] = {}
        for job in jobs:
            # A job's model is in its tag: one account's list may hold the part's earlier job at
            # another model (failed for the quota). A job sent before the tag named it: this model.
            tag = (job.metadata.get("claim", ""), job.metadata.get("part", ""), job.metadata.get("model", ""))
            by_tag.setdefault(tag, job)
        found: list[CohortBatch] = []
        for batch in claimed:
            key = (str(batch.claim), str(batch.part))
            tagged = by_tag.get((*key, link.model_name)) or by_tag.get((*key, ""))
            if tagged is None:
                result.unconfirmed += 1
                continue
            saved = replace(batch, batch_id=tagged.batch_id, state="submitted")
            if not self.store.change(saved, was="claimed"):
                continue  # another run found it first
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
        try:
            open_batches = [
                batch
                for batch in self.store.open_batches(dates)
                if (batch.zone, batch.local_date, batch.part) not in handled
            ]
        except self.storage_errors as error:
            self._trouble("the open batch jobs", error, result)
            return
        jobs = [batch for batch in open_batches if batch.batch_id is not None]
        claimed = [b for b in open_batches if b.batch_id is None and b.claim is not None and b.claimed_at is not None]
        if claimed:
            try:
                jobs += self._recover(claimed, result)
            except self.storage_errors as error:
                self._trouble("the claimed parts", error, result)
        troubles: tuple[type[Exception], ...] = (ProviderError, *self.storage_errors)
        for batch in jobs:
            try:
                if not self._collect_job(batch, now, result, time_left_s):
                    return  # out of time: this job stays open for the next run (what is stored stays)
            except troubles as error:
                self._trouble(str(batch.batch_id), error, result, part=batch.label)

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
        if status.over_quota and batch.keys_from is not None and batch.keys_below is not None:
            self._move_on(batch, status, result)
            return True
        if status.state == "failed":
            if self.store.change(replace(batch, state="refused"), was="submitted"):
                result.refused.append((f"{batch.zone} {batch.local_date}", "; ".join(status.errors)))
            return True
        reader = AnswerReader(self.generation.store_batch_answer, self.workers, self.storage_errors)
        answers = model.answers(batch_id)
        try:
            read = reader.read(
                answers,
                job=batch_id,
                local_date=batch.local_date,
                claim=batch.claim,
                signed=batch.signed_ids,
                time_left_s=time_left_s,
            )
        finally:
            close = getattr(answers, "close", None)
            if close is not None:
                close()  # stops the download when the run stopped early
        result.collected.update(read.outcomes)
        result.unusable.update(read.unusable)
        if read.storage_errors:
            # The job stays open: the next run reads it again (what was stored is kept).
            why = f"{len(read.storage_errors)} answer(s) could not be stored: {read.storage_errors[0]}"
            self._trouble(batch_id, RuntimeError(why), result, part=batch.label)
            return True
        if read.read_whole and self.store.change(replace(batch, state="collected"), was="submitted"):
            # Counted once, by the run that collected the job whole.
            result.tokens += read.tokens
            result.cost_usd += read.cost_usd
        return read.read_whole

    def _move_on(self, batch: CohortBatch, status: BatchJobStatus, result: BatchRun) -> None:
        """A job the provider failed for its queue quota: its part's users asked again of the models
        after its own (none: the synchronous path)."""
        names = [link.model.model_name for link in self._chain.links]
        held = names.index(batch.model) if batch.model in names else 0
        why = "; ".join(status.errors) or "over the provider's queue quota"
        self._passed_on(batch, names[held], why, result)
        # Back to claimed, still at its model: a run that stops here leaves it to be found again
        # by its tag, failed for the quota, and moved on by the next run.
        moving = replace(batch, batch_id=None, state="claimed")
        if not self.store.change(moving, was="submitted"):
            return  # another run moved it on
        items = self._requests(moving, result, part_only=True)
        if not items:
            self.store.change(replace(moving, state="empty"), was="claimed")
            return
        later = self._chain.links[held + 1 :]
        self._send(replace(moving, requests=len(items)), items, result, later, [f"{names[held]}: {why}"])

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
