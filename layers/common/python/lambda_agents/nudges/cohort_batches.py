"""The records of the fan-out's Batch API path (docs/nudges.md#the-batch-api-path): one per job of a
cohort (``CohortBatch``), the port that keeps them (``CohortBatchStore``) and what one run did
(``BatchRun``).

A record moves claimed -> submitted -> collected (or refused / empty), and back to claimed only
when its job is moved on to the next model of the chain. Runs may overlap (EventBridge may deliver
a schedule twice, a slow run may meet the next one), so every move after the claim is conditional
on the state the run read (``CohortBatchStore.change``): of two runs that read the same record,
one moves it and the other finds it moved and leaves it. A collected job is never reopened, and
its tokens are counted by the one run whose move to ``collected`` was written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol


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
    # The part's users are the cohort's whose request key (``batch_answers.request_key``: a digest
    # of the claim and the user's id) is at least ``keys_from`` and below ``keys_below`` ("": no
    # bound): how the part is asked again of the next model when its job failed for the provider's
    # quota. Bounds in the digests' order name no user (a user's deletion leaves nothing here).
    keys_from: str | None = None
    keys_below: str | None = None
    # Whether the job's lines carry the cohort's request ids (``batch_answers.request_id``), so
    # that only its own requests' answers are taken; a job sent before they existed carries user ids.
    signed_ids: bool = False

    @property
    def label(self) -> str:
        return f"{self.zone} {self.local_date} part {self.part}"


class CohortBatchStore(Protocol):
    def claim(self, batch: CohortBatch) -> bool:
        """Write the cohort's part 0 unless a run claimed the cohort before (then False)."""
        ...

    def save(self, batch: CohortBatch) -> None:
        """Write a new part of a cohort this run claimed (parts after 0, never written before)."""
        ...

    def change(self, batch: CohortBatch, was: str) -> bool:
        """Write ``batch`` over its record only while the record's state is ``was``; False (and
        nothing written) when another run moved it first."""
        ...

    def open_batches(self, local_dates: Sequence[str]) -> list[CohortBatch]:
        """The jobs of these dates not settled yet: ``submitted`` ones, and ``claimed`` ones (a job
        may have been sent whose answer never came)."""
        ...


@dataclass
class BatchRun:
    submitted: list[CohortBatch] = field(default_factory=list)
    skipped_users: Counter[str] = field(default_factory=Counter)
    collected: Counter[str] = field(default_factory=Counter)  # per-user outcomes of collected jobs
    # why lines of collected jobs stored nothing: an answer's flaw, or a line that was no answer
    # to the job's own requests (unreadable_line, unknown_request, duplicate_line)
    unusable: Counter[str] = field(default_factory=Counter)
    cancelled: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (cohort, why) of jobs the provider refused
    still_running: int = 0
    # (job or cohort part, why) of each provider or storage call that failed this run (docs/nudges.md)
    job_errors: list[tuple[str, str]] = field(default_factory=list)
    recovered: list[CohortBatch] = field(default_factory=list)  # jobs found by their claim's tag
    # (cohort part, model, why) of each model of the chain that did not take a job, the next one tried
    passed_on: list[tuple[str, str, str]] = field(default_factory=list)
    unconfirmed: int = 0  # claimed parts whose job is not found (yet, or never sent)
    tokens: int = 0  # the answers of the jobs collected: billed (at the Batch API's price) used or not
    cost_usd: float = 0.0  # what they cost at the price table's Batch prices (a model without a price: nothing)
