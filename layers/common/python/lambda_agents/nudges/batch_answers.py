"""A finished batch job's answers, read and stored (docs/nudges.md#the-batch-api-path, "Collect").

Each line of a job's output or error file names its request by ``custom_id`` (OpenAI's Batch guide:
"used to match outputs to inputs"); nothing documented promises that every line is one of the
job's own requests, readable, and written once. So a line is taken only when it is the answer to a
request the cohort sent: its ``custom_id`` is the cohort's request id for a user (``request_id``,
the user's id and a digest of the cohort's claim and that id), a line seen before in the same
reading is a duplicate, and a line that names no request at all is unreadable. Each of these
stores nothing, is counted (``unusable``: ``unknown_request``, ``duplicate_line``,
``unreadable_line``) and logged with the job, never with the line's text.

Every other line is stored by the synchronous generator's own code (``store``: validation, slot
table, one conditional write) on ``workers`` threads, as the lines arrive (``map_bounded``). A
storage error while storing one answer is that answer's (counted in ``storage_errors``): the
others go on, and the job stays open for the next run, which reads it again (what was stored is
``already_generated`` then). The job's billed tokens are every answer the provider made for it
(used or not, an unknown line's too: the provider bills what it generated), each request once.
"""

from __future__ import annotations

import hashlib
from collections import Counter, deque
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field
from typing import TypeVar

from ..llm import ChatResponse
from ..llm.accounting import batch_cost_usd
from ..llm.batches import UNREADABLE_LINE, BatchAnswer
from ..observability import logger
from .generation import GenerationJob, GenerationOutcome, LocalDateOutOfRange

# A run stops storing answers when this little of its time is left; the next run goes on.
TIME_RESERVE_S = 10.0
ID_SEPARATOR = "~"
UNKNOWN_REQUEST = "unknown_request"
DUPLICATE_LINE = "duplicate_line"
STORAGE_FAILED = "storage_failed"

Item = TypeVar("Item")
Result = TypeVar("Result")


def request_id(claim: str, user_id: str) -> str:
    """The ``custom_id`` of ``user_id``'s line in the jobs of the cohort claimed with ``claim``."""
    return f"{user_id}{ID_SEPARATOR}{request_key(claim, user_id)}"


def request_key(claim: str, user_id: str) -> str:
    """The digest of the cohort's claim and a user's id: it ends the user's request id, and orders
    the cohort's users into parts (a part's bounds are keys, which name no user)."""
    return hashlib.blake2b(f"{claim}\n{user_id}".encode(), digest_size=8).hexdigest()


def key_between(below: str, above: str) -> str:
    """The shortest start of ``above`` that sorts after ``below`` (``below`` < ``above``): a bound
    that puts ``below`` under it and ``above`` at or over it, and holds less of either key."""
    for length in range(1, len(above) + 1):
        if above[:length] > below:
            return above[:length]
    return above


def requested_user(custom_id: str) -> str:
    """The user of a request id this product made (not checked: for its own items)."""
    return custom_id.rpartition(ID_SEPARATOR)[0] or custom_id


def user_of(custom_id: str, claim: str | None, signed: bool) -> str | None:
    """The user a line answers, when the line is one of the cohort's requests; None otherwise. A
    job sent before request ids existed (``signed`` False) names its users by their ids."""
    if not signed or claim is None:
        return custom_id or None
    user_id, separator, digest = custom_id.rpartition(ID_SEPARATOR)
    if not separator or not user_id or digest != request_key(claim, user_id):
        return None
    return user_id


@dataclass
class JobAnswers:
    """What reading one finished job gave this run."""

    outcomes: Counter[str] = field(default_factory=Counter)  # per user: generated, answer_unusable, ...
    unusable: Counter[str] = field(default_factory=Counter)  # why a line stored nothing
    storage_errors: list[str] = field(default_factory=list)
    tokens: int = 0  # billed for the job's answers, each request once
    cost_usd: float = 0.0
    read_whole: bool = True  # False: the run ran out of time part-way


@dataclass
class AnswerReader:
    """Reads a job's answers for the cohort's ``local_date`` and stores each through ``store``.
    ``storage_errors``: the storage adapters' failures (passed in: the domain imports no storage)."""

    store: Callable[[GenerationJob, ChatResponse], GenerationOutcome]
    workers: int
    storage_errors: tuple[type[Exception], ...] = ()

    def read(
        self,
        answers: Iterable[BatchAnswer],
        *,
        job: str,
        local_date: str,
        claim: str | None,
        signed: bool,
        time_left_s: Callable[[], float],
    ) -> JobAnswers:
        found = JobAnswers()

        def store(entry: tuple[str, BatchAnswer]) -> tuple[str, str | None]:
            user_id, answer = entry
            if answer.response is None:
                return "answer_missing", (answer.error or "no answer").split(":", 1)[0]
            try:
                outcome = self.store(GenerationJob(userId=user_id, localDate=local_date), answer.response)
            except LocalDateOutOfRange:
                return "skipped_out_of_range", None
            except self.storage_errors as error:
                return STORAGE_FAILED, str(error)
            return outcome.status, outcome.fallback_reason

        entries = self._own_lines(answers, found, job=job, claim=claim, signed=signed, time_left_s=time_left_s)
        with closing(map_bounded(store, entries, self.workers)) as outcomes:
            for status, reason in outcomes:
                found.outcomes[status] += 1
                if status == STORAGE_FAILED:
                    found.storage_errors.append(str(reason))
                elif status in ("answer_missing", "answer_unusable"):
                    found.unusable[str(reason)] += 1
        return found

    @staticmethod
    def _own_lines(
        answers: Iterable[BatchAnswer],
        found: JobAnswers,
        *,
        job: str,
        claim: str | None,
        signed: bool,
        time_left_s: Callable[[], float],
    ) -> Iterator[tuple[str, BatchAnswer]]:
        """The lines that answer the cohort's own requests, each once, with their users; every
        answer the provider made is counted as billed, and every other line as unusable. Stops
        (the job not read whole) when the run's time is short: those in flight are still stored."""
        seen: set[str] = set()
        for answer in answers:
            if time_left_s() < TIME_RESERVE_S:
                found.read_whole = False
                return
            if not answer.custom_id:
                _set_aside(found, UNREADABLE_LINE, job, answer)
                continue
            if answer.custom_id in seen:
                _set_aside(found, DUPLICATE_LINE, job, answer)
                continue
            seen.add(answer.custom_id)
            if answer.response is not None:
                found.tokens += answer.response.usage.total_tokens
                found.cost_usd += batch_cost_usd(answer.response)
            user_id = user_of(answer.custom_id, claim, signed)
            if user_id is None:
                _set_aside(found, UNKNOWN_REQUEST, job, answer)
                continue
            yield user_id, answer


def _set_aside(found: JobAnswers, why: str, job: str, answer: BatchAnswer) -> None:
    found.unusable[why] += 1
    logger.warning(
        "a line of a batch job's results is not an answer to its own requests; nothing is stored for it",
        extra={"batchId": job, "why": why, "customId": answer.custom_id[:100], "error": answer.error},
    )


def map_bounded(
    function: Callable[[Item], Result], items: Iterable[Item], workers: int
) -> Generator[Result, None, None]:
    """``function`` over ``items`` on ``workers`` threads, results in order, like ``pool.map`` but
    taking ``items`` only as results are used: at most two per worker in flight, so a streamed
    input (a job's answers) is never held whole. Closing the iterator stops taking items; those
    in flight finish first."""
    with ThreadPoolExecutor(workers) as pool:
        pending: deque[Future[Result]] = deque()
        for item in items:
            pending.append(pool.submit(function, item))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
