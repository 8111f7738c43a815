"""The model port for batch jobs (OpenAI's Batch API): many requests sent as one job, answered
within a window of hours at half the synchronous price, from a quota of their own.

Provider-neutral, as ``types.ChatModel`` is: a job is a list of ``BatchItem`` (a caller's id and
the same ``ChatRequest`` a synchronous call would send), its answers come back as
``ChatResponse`` values the engine reads like any other (``engine.read_structured_answer``).
Only ``openai_batches`` knows the files, the JSONL lines and the statuses' wire names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from .types import ChatRequest, ChatResponse

BatchState = Literal[
    "validating", "in_progress", "finalizing", "completed", "expired", "cancelling", "cancelled", "failed"
]
# A job in one of these has its answers written (a failed job has none): nothing more will come.
FINISHED: frozenset[str] = frozenset({"completed", "expired", "cancelled", "failed"})
# OpenAI's limits on one job's input file.
MAX_BATCH_REQUESTS = 50_000
MAX_BATCH_BYTES = 200 * 1024 * 1024


@dataclass(frozen=True)
class BatchItem:
    custom_id: str
    request: ChatRequest


@dataclass(frozen=True)
class BatchAnswer:
    """One request's outcome: its answer, or why it has none (the provider's status and message)."""

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

    @property
    def finished(self) -> bool:
        return self.state in FINISHED


class BatchModel(Protocol):
    @property
    def model_name(self) -> str: ...

    def submit(self, items: Sequence[BatchItem], metadata: Mapping[str, str]) -> BatchJobStatus:
        """Send the items as one job (ProviderError when the provider refuses the upload)."""
        ...

    def status(self, batch_id: str) -> BatchJobStatus: ...

    def answers(self, batch_id: str) -> list[BatchAnswer]:
        """Every answered or failed request of a finished job (none of a refused one)."""
        ...

    def cancel(self, batch_id: str) -> BatchJobStatus:
        """Stop the job; the answers it had made stay readable once it is ``cancelled``."""
        ...
