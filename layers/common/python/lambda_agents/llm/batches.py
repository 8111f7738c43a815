"""The model port for batch jobs (OpenAI's Batch API): many requests sent as one job, answered
within a window of hours at half the synchronous price, from a quota of their own.

Provider-neutral, as ``types.ChatModel`` is: a job is a list of ``BatchItem`` (a caller's id and
the same ``ChatRequest`` a synchronous call would send), its answers come back as
``ChatResponse`` values the engine reads like any other (``engine.read_structured_answer``).
Only ``openai_batches`` knows the files, the JSONL lines and the statuses' wire names.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from .errors import ProviderError
from .types import ChatRequest, ChatResponse

BatchState = Literal[
    "validating", "in_progress", "finalizing", "completed", "expired", "cancelling", "cancelled", "failed"
]
# A job in one of these has its answers written (a failed job has none): nothing more will come.
FINISHED: frozenset[str] = frozenset({"completed", "expired", "cancelled", "failed"})
# OpenAI's limits on one job's input file ("up to 50,000 requests ... up to 200 MB", the Batch
# guide), the megabytes read as decimal: the stricter reading.
MAX_BATCH_REQUESTS = 50_000
MAX_BATCH_BYTES = 200 * 1000 * 1000
# A job's metadata (the API reference, batch create): at most 16 pairs, keys of at most 64
# characters, values of at most 512.
MAX_METADATA_PAIRS = 16
MAX_METADATA_KEY = 64
MAX_METADATA_VALUE = 512
# Why a job failed that says nothing of its requests: the provider's queue of enqueued tokens for
# the model was full when the job was validated (OpenAI reports it so, asynchronously, as a
# ``failed`` job; the Batch guide's rate limits). Another model, or the same one later, may take it.
QUOTA_ERROR_CODES: frozenset[str] = frozenset({"token_limit_exceeded"})


class SubmitUnconfirmed(ProviderError):
    """The job's create call was sent but its answer was lost (a timeout, a dropped connection, a
    5xx): the provider may have accepted the job, and then runs and bills it. Only a look-up by
    the job's metadata (``BatchModel.jobs_since``) says whether it did."""

    kind = "unconfirmed"


@dataclass(frozen=True)
class BatchItem:
    custom_id: str
    request: ChatRequest


# The error of a result line that could not be read at all (no ``custom_id`` to match it by).
UNREADABLE_LINE = "unreadable_line"


@dataclass(frozen=True)
class BatchAnswer:
    """One request's outcome: its answer, or why it has none (the provider's status and message).
    A line that names no request has an empty ``custom_id`` and an ``UNREADABLE_LINE`` error."""

    custom_id: str
    response: ChatResponse | None
    error: str | None = None


@dataclass(frozen=True)
class BatchJobStatus:
    batch_id: str
    state: BatchState
    total: int = 0
    completed: int = 0
    failed: int = 0
    errors: tuple[str, ...] = ()  # why the job itself was refused (validation, quota)
    error_codes: tuple[str, ...] = ()  # the provider's codes of those errors
    created_at: int = 0  # Unix seconds, the provider's clock
    metadata: Mapping[str, str] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.state in FINISHED

    @property
    def over_quota(self) -> bool:
        """Failed for the provider's queue quota only (``QUOTA_ERROR_CODES``), not for its file."""
        return self.state == "failed" and bool(self.error_codes) and set(self.error_codes) <= QUOTA_ERROR_CODES


class BatchModel(Protocol):
    @property
    def model_name(self) -> str: ...

    def request_bytes(self, item: BatchItem) -> int:
        """The size of the item's line in a job's input file (a file holds ``MAX_BATCH_BYTES``)."""
        ...

    def submit(self, items: Sequence[BatchItem], metadata: Mapping[str, str]) -> BatchJobStatus:
        """Send the items as one job, tagged with ``metadata``. ``SubmitUnconfirmed`` when the
        create call's answer was lost (the job may exist), another ``ProviderError`` when the
        provider refused it (it does not), ``ValueError`` for a job over the provider's limits."""
        ...

    def status(self, batch_id: str) -> BatchJobStatus: ...

    def answers(self, batch_id: str) -> Iterator[BatchAnswer]:
        """Every answered or failed request of a finished job (none of a refused one), read as
        they arrive, never the whole file at once. ``ProviderError`` may come mid-way; a caller
        that stops early closes the iterator (the download is closed with it)."""
        ...

    def cancel(self, batch_id: str) -> BatchJobStatus:
        """Stop an ``in_progress`` job; the answers it had made stay readable once it is ``cancelled``."""
        ...

    def jobs_since(self, created_after: int) -> list[BatchJobStatus]:
        """The account's jobs created at or after that Unix time, with their metadata: how a job
        whose create answer was lost is found again."""
        ...
