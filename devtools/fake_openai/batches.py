"""The fake's Files and Batches endpoints: OpenAI's Batch API as its documentation describes it.

Sources, cited next to each behaviour below:
- [guide] the Batch guide, https://platform.openai.com/docs/guides/batch
- [create] https://platform.openai.com/docs/api-reference/batch/create
- [object] https://platform.openai.com/docs/api-reference/batch/object
- [cancel] https://platform.openai.com/docs/api-reference/batch/cancel
- [list] https://platform.openai.com/docs/api-reference/batch/list
- [files] https://platform.openai.com/docs/api-reference/files/create

A job is a JSONL file of ``chat.completions`` requests uploaded with ``purpose=batch``, then
``POST /v1/batches`` naming it. The create call checks only its own parameters; the file is
validated afterwards, while the job is ``validating``, and a file that breaks a rule makes the job
``failed`` with the reasons in ``errors`` [guide: status table]. A valid job is ``in_progress``,
then ``finalizing`` while its results are prepared, then ``completed`` with two files: the answers
(``output_file_id``) and the requests that failed (``error_file_id``) [object], each in any line
order [guide: "the output line order may not match the input line order"]. A job whose window ends
first is ``expired``: its answers so far in the output file, the rest ``batch_expired`` lines in
the error file [guide: "Batch expiration"]. A cancelled job is ``cancelling`` for a while, then
``cancelled`` with what it had made [cancel].

``BatchScript`` says how a job runs, in the provider's seconds (the server's ``time_scale``
applies): how long each state lasts, which requests get a scripted answer (truncated, refused,
invalid) or fail, whether its window ends early, whether its file fails validation, and which of
its calls fail (a create whose answer is lost after the job was accepted, a status or cancel call
that fails every time). Answers are made by the same code as synchronous ones and billed as batch
requests (``BillingRecord.batch``, at half price on OpenAI's list).

Nothing in the documentation promises a call that always succeeds or an output file without a
flaw, so the fake can fail what the provider may fail (``BatchDesk.fail_next``): an upload, a
create (refused with a 400 or a 429: no job is made, as with any refused request [create]) and
the list, each answering a scripted fault instead; and a job's output file may hold what a
reader must survive (``BatchScript.unreadable_lines``, ``duplicated``, ``unknown_ids``): a line
that is not a result, a request's line written twice, a line for a ``custom_id`` the job never
had. The documentation says only that each line names its request's ``custom_id`` [guide:
"custom_id ... will be used to match outputs to inputs"]; a reader must match lines to its own
requests and take each once.
"""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any, Literal

from .answers import Billed, bill, completion, default_reply, prompt_tokens_of, token_limit, unsupported_token_field
from .script import Fault, Reply

COMPLETION_WINDOW = "24h"  # the only window [create: completion_window]
WINDOW_S = 24 * 3600.0
# [guide: rate limits] "A single batch may include up to 50,000 requests, and a batch input file
# can be up to 200 MB in size." Counted in decimal megabytes: the stricter reading.
MAX_REQUESTS = 50_000
MAX_INPUT_BYTES = 200 * 1000 * 1000
MAX_UPLOAD_BYTES = 512 * 1000 * 1000  # [files] "Individual files can be up to 512 MB"
# [create: metadata] "Set of 16 key-value pairs ... Keys are strings with a maximum length of 64
# characters. Values are strings with a maximum length of 512 characters."
MAX_METADATA_PAIRS = 16
MAX_METADATA_KEY = 64
MAX_METADATA_VALUE = 512
LIST_LIMIT = (1, 100, 20)  # [list: limit] "can range between 1 and 100, and the default is 20"
EXPIRED_MESSAGE = "This request could not be executed before the completion window expired."
CANCELLED_MESSAGE = "This request was not executed because the batch was cancelled."
# A closed connection instead of an answer (what a timeout looks like to the client).
CLOSED = 0
Closed = Literal["closed"]
# The calls ``BatchDesk.fail_next`` can fail: nothing is stored or made by a failed one.
FailingCall = Literal["upload", "create", "list"]


@dataclass(frozen=True)
class BatchScript:
    """How one job runs; times in the provider's seconds, scaled by the server's ``time_scale``.

    ``validating_s`` / ``running_s`` / ``finalizing_s``: how long the job is ``validating``,
    ``in_progress`` (its requests done evenly over it) and ``finalizing``. ``cancelling_s``: how long
    a cancelled job stays ``cancelling`` ([cancel]: "for up to 10 minutes").
    ``answers``: a scripted ``Reply`` (an answer to read) or ``Fault`` (a request that failed: its
    status in the error file) by ``custom_id``; the others get the schema's sample. ``key_of``: the
    key of ``answers`` a request's ``custom_id`` names (default: the ``custom_id`` itself), for a
    client whose ids are made at run time.
    ``expires_after``: the window ends once that many requests are done (``expired``).
    ``refuse``: the file fails validation with this message (``failed`` after ``validating``).
    ``in_input_order``: write the result files in the input's order (the provider promises none).
    ``lost_create``: the job is accepted, but the create call answers with this fault, or
    ``"closed"`` (the connection closes with no answer, as on a timeout).
    ``status_fault`` / ``cancel_fault``: every status (``GET /v1/batches/{id}``) or cancel call for
    this job answers with this fault, the job itself going on.
    ``unreadable_lines``: that many lines of the output file are not a request's result (not JSON).
    ``duplicated``: these requests' answer lines are written twice (named as ``answers`` are).
    ``unknown_ids``: answer lines (billed as answers) for these ``custom_id`` values, which the job
    never had.
    ``applies_to``: the script is for the first job whose metadata it accepts (default: any job)."""

    validating_s: float = 0.1
    running_s: float = 1.0
    finalizing_s: float = 0.1
    cancelling_s: float = 0.5
    answers: Mapping[str, Reply | Fault] = field(default_factory=dict)
    key_of: Callable[[str], str] | None = None
    expires_after: int | None = None
    refuse: str | None = None
    in_input_order: bool = False
    lost_create: Fault | Closed | None = None
    status_fault: Fault | None = None
    cancel_fault: Fault | None = None
    unreadable_lines: int = 0
    duplicated: tuple[str, ...] = ()
    unknown_ids: tuple[str, ...] = ()
    applies_to: Callable[[Mapping[str, str]], bool] | None = None


@dataclass
class StoredFile:
    id: str
    filename: str
    purpose: str
    data: bytes
    created_at: int

    def as_object(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.data),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
        }


@dataclass
class BatchJob:
    id: str
    input_file_id: str
    endpoint: str
    metadata: dict[str, str]
    requests: list[dict[str, Any]]
    script: BatchScript
    started: float  # the server's monotonic clock
    created_at: int  # wall clock, seconds
    problems: list[dict[str, Any]] = field(default_factory=list)  # revealed when validation ends
    cancel_at: float | None = None
    final: str | None = None  # completed | expired | cancelled | failed, once written
    output_file_id: str | None = None
    error_file_id: str | None = None
    counts: tuple[int, int, int] = (0, 0, 0)  # total, completed, failed, once final
    moments: dict[str, float] = field(default_factory=dict)  # "<status>_at" -> monotonic time


class BatchDesk:
    """Files and batch jobs of one fake account."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        *,
        time_scale: Callable[[], float],
        record: Callable[[dict[str, Any], Billed, str], None],
        cached_tokens: Callable[[dict[str, Any], Reply], int] = lambda body, reply: 0,
        enqueued_token_quota: int | None = None,
        seed: int = 0,
    ) -> None:
        self._clock = clock
        self._scale = time_scale
        self._record = record
        self._cached_tokens = cached_tokens
        self.enqueued_token_quota = enqueued_token_quota
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._rng = random.Random(seed)
        self.files: dict[str, StoredFile] = {}
        self.jobs: dict[str, BatchJob] = {}
        self._scripts: list[BatchScript] = []
        self._failures: dict[str, deque[Fault | Closed]] = {"upload": deque(), "create": deque(), "list": deque()}

    def fail_next(self, call: FailingCall, *faults: Fault | Closed) -> None:
        """The next ``call``s answer these faults, in order, instead of being served: a failed
        upload stores no file, a refused create makes no job (a 400 or a 429 is a refusal), a
        failed list returns nothing. ``"closed"``: the connection closes with no answer."""
        with self._lock:
            self._failures[call].extend(faults)

    def _failure(self, call: FailingCall) -> tuple[int, dict[str, Any]] | None:
        with self._lock:
            queued = self._failures[call]
            return _fault(queued.popleft()) if queued else None

    def script_next(self, *scripts: BatchScript) -> None:
        """The next jobs run as these say: each job takes the first queued script that applies to
        its metadata (then ``BatchScript()``)."""
        with self._lock:
            self._scripts.extend(scripts)

    # -- files ---------------------------------------------------------------------------------

    def upload(self, content_type: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        failed = self._failure("upload")
        if failed is not None:
            return failed
        fields = _multipart(content_type, raw)
        if fields is None or "file" not in fields or "purpose" not in fields:
            return 400, _error("a multipart/form-data body with 'file' and 'purpose' is required")
        purpose = fields["purpose"][1].decode("utf-8", "replace")
        if purpose not in ("batch", "assistants", "fine-tune", "user_data", "evals", "vision"):
            return 400, _error(f"'{purpose}' is not a valid purpose", "purpose")
        filename, data = fields["file"]
        if len(data) > MAX_UPLOAD_BYTES:
            return 400, _error(f"File is too large: {len(data)} bytes, the limit is {MAX_UPLOAD_BYTES}.", "file")
        with self._lock:
            stored = StoredFile(f"file-{next(self._ids):06d}", filename or "upload", purpose, data, int(time.time()))
            self.files[stored.id] = stored
        return 200, stored.as_object()

    def file(self, file_id: str) -> StoredFile | None:
        with self._lock:
            return self.files.get(file_id)

    # -- batches -------------------------------------------------------------------------------

    def create(self, body: dict[str, Any], token_fields: tuple[str, ...]) -> tuple[int, dict[str, Any]]:
        """``POST /v1/batches``: its parameters are checked now (a 400); the file only while the
        job is ``validating`` [guide: status table, "validating"]."""
        failed = self._failure("create")
        if failed is not None:
            return failed
        endpoint = body.get("endpoint")
        if body.get("completion_window") != COMPLETION_WINDOW:
            return 400, _error("completion_window must be '24h'", "completion_window")
        if endpoint != "/v1/chat/completions":
            return 400, _error(f"endpoint {endpoint!r} is not served by this fake", "endpoint")
        metadata_problem = _metadata_problem(body.get("metadata"))
        if metadata_problem is not None:
            return 400, _error(metadata_problem, "metadata")
        stored = self.file(str(body.get("input_file_id")))
        if stored is None:
            return 404, _error(f"No such File object: {body.get('input_file_id')}", "input_file_id")
        if stored.purpose != "batch":
            return 400, _error("the input file's purpose must be 'batch'", "input_file_id")
        requests, problems = _read_requests(stored.data, str(endpoint), token_fields)
        metadata = {str(k): str(v) for k, v in (body.get("metadata") or {}).items()}
        with self._lock:
            script = self._script_for(metadata)
            if not problems and script.refuse is not None:
                problems = [{"code": "invalid_request", "message": script.refuse, "line": None}]
            if not problems:
                problems = self._quota_problems(requests)
            job = BatchJob(
                id=f"batch_{next(self._ids):06d}",
                input_file_id=stored.id,
                endpoint=str(endpoint),
                metadata=metadata,
                requests=requests if not problems else [],
                script=script,
                started=self._clock(),
                created_at=int(time.time()),
                problems=problems,
            )
            self.jobs[job.id] = job
            if script.lost_create is not None:
                return _fault(script.lost_create)
            return 200, self._object(job)

    def retrieve(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            job = self._job(batch_id, "status")
            return job if isinstance(job, tuple) else (200, self._object(job))

    def list_jobs(self, after: str | None, limit: str | None) -> tuple[int, dict[str, Any]]:
        """``GET /v1/batches``: a page of the account's jobs after the ``after`` cursor, newest first
        as OpenAI's list endpoints return them ([list] documents the cursor, not the order)."""
        failed = self._failure("list")
        if failed is not None:
            return failed
        low, high, default = LIST_LIMIT
        try:
            size = default if limit is None else int(limit)
        except ValueError:
            return 400, _error(f"limit must be an integer, got {limit!r}", "limit")
        if not low <= size <= high:
            return 400, _error(f"limit must be between {low} and {high}, got {size}", "limit")
        with self._lock:
            newest_first = list(reversed(self.jobs.values()))
            start = 0
            if after is not None:
                ids = [job.id for job in newest_first]
                if after not in ids:
                    return 400, _error(f"No batch found with id '{after}'.", "after")
                start = ids.index(after) + 1
            page = newest_first[start : start + size]
            data = [self._object(job) for job in page]
        return 200, {
            "object": "list",
            "data": data,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
            "has_more": start + size < len(newest_first),
        }

    def cancel(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        """[cancel] "Cancels an in-progress batch. The batch will be in status cancelling for up to
        10 minutes, before changing to cancelled, where it will have partial results (if any)
        available in the output file." What it answers for a job in another state is not
        documented: the fake refuses it with a 400, the generic answer to a request the API
        cannot take, so a caller must not count on cancelling anything but ``in_progress``."""
        with self._lock:
            job = self._job(batch_id, "cancel")
            if isinstance(job, tuple):
                return job
            status = self._advance(job)
            if status != "in_progress":
                return 400, _error(f"Only an in-progress batch can be cancelled; this one is '{status}'.")
            job.cancel_at = self._clock()
            job.moments["cancelling_at"] = job.cancel_at
            return 200, self._object(job)

    # -- internals -------------------------------------------------------------------------------

    def _job(self, batch_id: str, call: Literal["status", "cancel"]) -> BatchJob | tuple[int, dict[str, Any]]:
        """The job ``batch_id`` names, or the answer instead (under the lock): 404 when there is
        none, its script's fault for this ``call``."""
        job = self.jobs.get(batch_id)
        if job is None:
            return 404, _error(f"No batch found with id '{batch_id}'.")
        fault = job.script.status_fault if call == "status" else job.script.cancel_fault
        return job if fault is None else _fault(fault)

    def _script_for(self, metadata: Mapping[str, str]) -> BatchScript:
        for index, script in enumerate(self._scripts):
            if script.applies_to is None or script.applies_to(metadata):
                return self._scripts.pop(index)
        return BatchScript()

    def _quota_problems(self, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """[guide: rate limits] batch queue limits count the enqueued tokens of the jobs not yet
        finished; a job past them fails validation."""
        if self.enqueued_token_quota is None:
            return []
        queued = sum(_enqueued_tokens(job) for job in self.jobs.values() if self._advance(job) not in _DONE)
        needed = sum(_request_tokens(request["body"]) for request in requests)
        if queued + needed <= self.enqueued_token_quota:
            return []
        message = (
            f"Enqueued token limit reached: limit {self.enqueued_token_quota}, already enqueued {queued}, "
            f"this batch {needed}."
        )
        return [{"code": "token_limit_exceeded", "message": message, "line": None}]

    def _span(self, seconds: float) -> float:
        return seconds * self._scale()

    def _validated_at(self, job: BatchJob) -> float:
        return job.started + self._span(job.script.validating_s)

    def _ran_at(self, job: BatchJob) -> float:
        return self._validated_at(job) + self._span(job.script.running_s)

    def _expires(self, job: BatchJob) -> bool:
        limit = job.script.expires_after
        return limit is not None and limit < len(job.requests)

    def _done_by(self, job: BatchJob, at: float) -> int:
        """How many requests the provider had run by ``at``: evenly over the job's in_progress time."""
        start = self._validated_at(job)
        span = max(1e-9, self._ran_at(job) - start)
        done = int(len(job.requests) * min(1.0, max(0.0, (at - start) / span)))
        if job.script.expires_after is not None:
            done = min(done, job.script.expires_after)
        return done

    def _advance(self, job: BatchJob) -> str:
        """The job's status now; a job that has just ended has its files written."""
        if job.final is not None:
            return job.final
        now = self._clock()
        validated = self._validated_at(job)
        if now < validated:
            return "validating"
        if job.problems:
            job.moments["failed_at"] = validated
            job.final = "failed"
            return job.final
        job.moments["in_progress_at"] = validated
        if job.cancel_at is not None:
            cancelled = job.cancel_at + self._span(job.script.cancelling_s)
            if now < cancelled:
                return "cancelling"
            self._finish(job, "cancelled", self._done_by(job, job.cancel_at), cancelled)
            return "cancelled"
        ran = self._ran_at(job)
        if now < ran:
            return "in_progress"
        if self._expires(job):
            # [guide: batch expiration] the window ended: the unfinished requests are cancelled
            self._finish(job, "expired", self._done_by(job, ran), ran)
            return "expired"
        job.moments["finalizing_at"] = ran
        finalized = ran + self._span(job.script.finalizing_s)
        if now < finalized:
            return "finalizing"
        self._finish(job, "completed", len(job.requests), finalized)
        return "completed"

    def _finish(self, job: BatchJob, status: str, done: int, at: float) -> None:
        answers: list[str] = []
        failures: list[str] = []
        for position, request in enumerate(job.requests):
            custom_id = request["custom_id"]
            line_id = f"batch_req_{job.id}_{position}"
            if position >= done:
                code, message = (
                    ("batch_cancelled", CANCELLED_MESSAGE)
                    if status == "cancelled"
                    else ("batch_expired", EXPIRED_MESSAGE)
                )
                failures.append(_line(line_id, custom_id, None, {"code": code, "message": message}))
                continue
            scripted = _scripted(job.script, custom_id)
            if isinstance(scripted, Fault):
                payload = {"error": {"message": scripted.message, "type": "server_error", "code": None}}
                response = {"status_code": scripted.status, "request_id": line_id, "body": payload}
                failures.append(_line(line_id, custom_id, response, None))
                continue
            reply = scripted or default_reply(request["body"])
            # The batch's requests use the account's prompt cache as its synchronous ones do.
            cached = self._cached_tokens(request["body"], reply)
            billed = bill(request["body"], reply, cached)
            self._record(request["body"], billed, custom_id)
            response = {"status_code": 200, "request_id": line_id, "body": completion(request["body"], reply, cached)}
            answers.append(_line(line_id, custom_id, response, None))
            if (job.script.key_of(custom_id) if job.script.key_of else custom_id) in job.script.duplicated:
                answers.append(answers[-1])
        answers += self._flawed_lines(job)
        if not job.script.in_input_order:
            # [guide] "Note that the output line order may not match the input line order."
            self._rng.shuffle(answers)
            self._rng.shuffle(failures)
        job.output_file_id = self._write(f"{job.id}_output.jsonl", answers)
        job.error_file_id = self._write(f"{job.id}_error.jsonl", failures)
        job.counts = (len(job.requests), len(answers), len(failures))
        job.moments[f"{status}_at"] = at
        job.final = status

    def _flawed_lines(self, job: BatchJob) -> list[str]:
        """What the script adds to the output file: answers to requests the job never had (each
        billed, as a made answer would be) and lines that are no request's result."""
        lines: list[str] = []
        sample = job.requests[0]["body"] if job.requests else None
        for number, custom_id in enumerate(job.script.unknown_ids):
            if sample is None:
                break
            reply = default_reply(sample)
            billed = bill(sample, reply, 0)
            self._record(sample, billed, custom_id)
            line_id = f"batch_req_{job.id}_unknown_{number}"
            response = {"status_code": 200, "request_id": line_id, "body": completion(sample, reply, 0)}
            lines.append(_line(line_id, custom_id, response, None))
        lines += [f'{{"id": "batch_req_{job.id}_cut_{n}", "custom_id": \n' for n in range(job.script.unreadable_lines)]
        return lines

    def _write(self, name: str, lines: list[str]) -> str | None:
        if not lines:
            return None
        stored = StoredFile(
            f"file-{next(self._ids):06d}", name, "batch_output", "".join(lines).encode(), int(time.time())
        )
        self.files[stored.id] = stored
        return stored.id

    def _counts(self, job: BatchJob, status: str) -> tuple[int, int, int]:
        """[object: request_counts] nothing is counted while the file is validated or when it
        failed validation; while the job runs, the requests it has run so far."""
        if job.final is not None:
            return job.counts
        if status == "validating":
            return (0, 0, 0)
        done = self._done_by(job, job.cancel_at if job.cancel_at is not None else self._clock())
        failed = sum(
            1 for request in job.requests[:done] if isinstance(_scripted(job.script, request["custom_id"]), Fault)
        )
        return (len(job.requests), done - failed, failed)

    def _unix(self, job: BatchJob, moment: float | None) -> int | None:
        """A monotonic moment as the provider's Unix time: the job's creation plus the provider's
        seconds since (scaled back), so a scripted hour reads as an hour."""
        if moment is None:
            return None
        return job.created_at + round((moment - job.started) / self._scale())

    def _object(self, job: BatchJob) -> dict[str, Any]:
        """The batch object [object], every timestamp set once its state has been reached."""
        status = self._advance(job)
        total, completed, failed = self._counts(job, status)
        problems = job.problems if status == "failed" else []
        moments = {
            name: self._unix(job, job.moments.get(name))
            for name in (
                "in_progress_at",
                "finalizing_at",
                "completed_at",
                "failed_at",
                "expired_at",
                "cancelling_at",
                "cancelled_at",
            )
        }
        return {
            "id": job.id,
            "object": "batch",
            "endpoint": job.endpoint,
            "errors": {"object": "list", "data": problems} if problems else None,
            "input_file_id": job.input_file_id,
            "completion_window": COMPLETION_WINDOW,
            "status": status,
            "output_file_id": job.output_file_id,
            "error_file_id": job.error_file_id,
            "created_at": job.created_at,
            "expires_at": job.created_at + int(WINDOW_S),
            **moments,
            "request_counts": {"total": total, "completed": completed, "failed": failed},
            "metadata": job.metadata or None,
        }


_DONE = frozenset({"completed", "expired", "cancelled", "failed"})


def _scripted(script: BatchScript, custom_id: str) -> Reply | Fault | None:
    return script.answers.get(script.key_of(custom_id) if script.key_of is not None else custom_id)


def _fault(fault: Fault | Closed) -> tuple[int, dict[str, Any]]:
    if fault == "closed":
        return CLOSED, {}
    kind = "invalid_request_error" if 400 <= fault.status < 429 else "server_error"
    return fault.status, {"error": {"message": fault.message, "type": kind, "param": None, "code": None}}


def _metadata_problem(metadata: Any) -> str | None:
    """[create: metadata] at most 16 pairs, string keys of at most 64 characters, string values of
    at most 512."""
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        return "metadata must be an object of strings"
    if len(metadata) > MAX_METADATA_PAIRS:
        return f"metadata holds at most {MAX_METADATA_PAIRS} pairs, got {len(metadata)}"
    for key, value in metadata.items():
        if not isinstance(value, str):
            return f"metadata value of {key!r} must be a string"
        if len(key) > MAX_METADATA_KEY:
            return f"metadata key {key[:20]!r}... is longer than {MAX_METADATA_KEY} characters"
        if len(value) > MAX_METADATA_VALUE:
            return f"metadata value of {key!r} is longer than {MAX_METADATA_VALUE} characters"
    return None


def _multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]] | None:
    """The form's fields as (filename, bytes), or None when the body is not multipart."""
    if not content_type.startswith("multipart/form-data"):
        return None
    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    if not message.is_multipart():
        return None
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if isinstance(name, str):
            payload = part.get_payload(decode=True)
            fields[name] = (part.get_filename(), payload if isinstance(payload, bytes) else b"")
    return fields


def _read_requests(
    data: bytes, endpoint: str, token_fields: tuple[str, ...]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The file's requests, or the validation errors that fail the whole job."""
    if len(data) > MAX_INPUT_BYTES:
        message = f"The input file is {len(data)} bytes; a batch input file can be up to 200 MB."
        return [], [{"code": "file_too_large", "message": message, "line": None}]
    requests: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    seen: set[str] = set()
    models: set[str] = set()
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError:
            errors.append({"code": "invalid_json_line", "message": "This line is not valid JSON.", "line": number})
            continue
        problem = _request_problem(request, endpoint, token_fields, seen)
        if problem is None and models and request["body"]["model"] not in models:
            # [guide] "Each input file can only include requests to a single model."
            problem = f"The model {request['body']['model']!r} differs from the file's {sorted(models)[0]!r}."
        if problem is not None:
            errors.append({"code": "invalid_request", "message": problem, "line": number})
            continue
        seen.add(request["custom_id"])
        models.add(request["body"]["model"])
        requests.append(request)
    if len(requests) > MAX_REQUESTS:
        message = f"The input file has {len(requests)} requests; a batch may include up to {MAX_REQUESTS}."
        errors.append({"code": "too_many_requests", "message": message, "line": None})
    if not requests and not errors:
        errors.append({"code": "empty_file", "message": "The input file has no requests.", "line": None})
    return requests, errors


def _request_problem(request: Any, endpoint: str, token_fields: tuple[str, ...], seen: set[str]) -> str | None:
    if not isinstance(request, dict):
        return "A line must be a JSON object."
    custom_id = request.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id:
        return "custom_id is required."
    if custom_id in seen:
        return f"The custom_id {custom_id!r} is duplicated: custom_id values must be unique."
    if request.get("method") != "POST" or request.get("url") != endpoint:
        return f"Every request must be a POST to {endpoint}."
    body = request.get("body")
    if not isinstance(body, dict) or not isinstance(body.get("model"), str) or not body.get("model"):
        return "body must be an object with a model."
    if body.get("stream"):
        return "A batch request cannot stream."
    return unsupported_token_field(body, token_fields)


def _request_tokens(body: dict[str, Any]) -> int:
    return prompt_tokens_of(body) + (token_limit(body) or 0)


def _enqueued_tokens(job: BatchJob) -> int:
    return sum(_request_tokens(request["body"]) for request in job.requests)


def _line(line_id: str, custom_id: str, response: dict[str, Any] | None, error: dict[str, Any] | None) -> str:
    return json.dumps({"id": line_id, "custom_id": custom_id, "response": response, "error": error}) + "\n"


def _error(message: str, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": None}}
