"""The model chain for batch jobs (docs/nudges.md#the-batch-api-path-through-the-model-chain): the
Batch API path goes through the same models, in the same order, as the synchronous chain
(``model_chain``), each link with its own endpoint, key and breaker.

A job goes to the first link that has a batch endpoint, whose breaker lets a call through, and whose
provider accepts it. What moves a job on is what moves a synchronous call on, restricted to what
surely made no job: a refused create (a 4xx: a key refused, a model or endpoint the provider does
not offer for batches, a quota), a failed upload, a 429, and a job the provider failed for its
queue quota after accepting it (``BatchJobStatus.over_quota``: no request ran). A create whose answer was lost
(``SubmitUnconfirmed``) never moves on: the provider may be running that job, and a second link's
job for the same users would be paid twice; the caller looks for it at that link. The caller (
``nudges.plan_batches``) does the walking, link by link, so it can put each link on record before
its job is sent: a job is found again at the link that holds it, and its status, answers and cancel
go to that link, in this run or any later one (``at``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .batches import BatchItem, BatchModel
from .errors import ProviderError
from .model_chain import Breaker


class BatchLinkUnknown(ProviderError):
    """A job is on record at a model the chain no longer has (the chain was reconfigured while the
    job ran): its status cannot be asked. Counted as that job's error each run until it ages out."""

    kind = "batch_link_unknown"
    retryable = False


@dataclass(frozen=True)
class BatchLink:
    model: BatchModel
    breaker: Breaker | None = None


class BatchChain:
    """``links`` in the synchronous chain's order, only those with a batch endpoint."""

    def __init__(self, links: Sequence[BatchLink]) -> None:
        if not links:
            raise ValueError("a batch chain needs at least one model with a batch endpoint")
        names = [link.model.model_name for link in links]
        if len(set(names)) != len(names):
            raise ValueError(f"each model of a batch chain must be named once: {names}")
        self.links = tuple(links)

    @property
    def model_name(self) -> str:
        return self.links[0].model.model_name

    def request_bytes(self, item: BatchItem) -> int:
        """The item's line at the link where it is largest: a part is cut before its link is
        known, and must fit the provider's file limit at whichever link takes it."""
        return max(link.model.request_bytes(item) for link in self.links)

    def at(self, model: str | None) -> BatchModel:
        """The link that holds a job on record at ``model`` (None: a record from before the chain,
        whose job went to the first model)."""
        if model is None:
            return self.links[0].model
        for link in self.links:
            if link.model.model_name == model:
                return link.model
        raise BatchLinkUnknown(f"the job is at {model}, which is no longer a model of the chain")
