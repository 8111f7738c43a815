"""The fake's Files and Batches endpoints: OpenAI's Batch API as the product uses it.

A batch job is a JSONL file of ``chat.completions`` requests uploaded with ``purpose=batch``,
then ``POST /v1/batches`` naming it. The provider validates the file (every line a request to
the batch's endpoint, unique ``custom_id`` values, a known token field) and refuses the whole job
when one line is wrong, or when its tokens would exceed the account's enqueued-token quota (a
quota of its own, apart from the per-minute limits). It then works through the requests within
the 24 h window and writes two files: the answers (``output_file_id``) and the requests that
failed (``error_file_id``); a job whose window ends first is ``expired`` with the answers made so
far; a cancelled one is ``cancelled`` with the answers made before the cancel.

``BatchScript`` says how the next job runs, in the server's time (``time_scale`` applies): when it
finishes, which requests get a scripted answer (truncated, refused, invalid) or fail, and whether
its window ends early. Answers are made by the same code as synchronous ones and billed as batch
requests (``BillingRecord.batch``, at half price on OpenAI's list).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

from .answers import bill, completion, default_reply, prompt_tokens_of, token_limit, unsupported_token_field
from .script import Fault, Reply

COMPLETION_WINDOW = "24h"
WINDOW_S = 24 * 3600.0
CANCELLING_S = 0.5  # how long a cancelled job stays "cancelling" (server time, scaled)
EXPIRED_MESSAGE = "This request could not be executed before the completion window expired."
CANCELLED_MESSAGE = "This request was not executed because the batch was cancelled."


@dataclass(frozen=True)
class BatchScript:
    """How a batch job runs. ``finishes_after_s``: from its creation to its end (scaled by the
    server's ``time_scale``). ``answers``: a scripted ``Reply`` (an answer to read) or ``Fault`` (a
    request that failed: its status in the error file) by ``custom_id``; the others get the
    schema's sample. ``expires_after``: the window ends once that many requests are done (status
    ``expired``, the rest in the error file). ``refuse``: the job fails validation with this message."""

    finishes_after_s: float = 1.0
    answers: Mapping[str, Reply | Fault] = field(default_factory=dict)
    expires_after: int | None = None
    refuse: str | None = None


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
    created_at: int
    errors: list[dict[str, Any]] = field(default_factory=list)
    cancel_at: float | None = None
    final: str | None = None  # completed | expired | cancelled | failed, once written
    output_file_id: str | None = None
    error_file_id: str | None = None
    counts: tuple[int, int, int] = (0, 0, 0)  # total, completed, failed


class BatchDesk:
    """Files and batch jobs of one fake account."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        *,
        time_scale: Callable[[], float],
        record: Callable[[int, int, str], None],
        enqueued_token_quota: int | None = None,
    ) -> None:
        self._clock = clock
        self._scale = time_scale
        self._record = record
        self.enqueued_token_quota = enqueued_token_quota
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.files: dict[str, StoredFile] = {}
        self.jobs: dict[str, BatchJob] = {}
        self._scripts: list[BatchScript] = []

    def script_next(self, *scripts: BatchScript) -> None:
        """The next jobs run as these say, in order (then as ``BatchScript()``)."""
        with self._lock:
            self._scripts.extend(scripts)

    # -- files ---------------------------------------------------------------------------------

    def upload(self, content_type: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        fields = _multipart(content_type, raw)
        if fields is None or "file" not in fields or "purpose" not in fields:
            return 400, _error("a multipart/form-data body with 'file' and 'purpose' is required")
        purpose = fields["purpose"][1].decode("utf-8", "replace")
        if purpose not in ("batch", "assistants", "fine-tune", "user_data", "evals", "vision"):
            return 400, _error(f"'{purpose}' is not a valid purpose", "purpose")
        filename, data = fields["file"]
        with self._lock:
            stored = StoredFile(f"file-{next(self._ids):06d}", filename or "upload", purpose, data, int(time.time()))
            self.files[stored.id] = stored
        return 200, stored.as_object()

    def file(self, file_id: str) -> StoredFile | None:
        with self._lock:
            return self.files.get(file_id)

    # -- batches -------------------------------------------------------------------------------

    def create(self, body: dict[str, Any], token_fields: tuple[str, ...]) -> tuple[int, dict[str, Any]]:
        endpoint = body.get("endpoint")
        if body.get("completion_window") != COMPLETION_WINDOW:
            return 400, _error("completion_window must be '24h'", "completion_window")
        if endpoint != "/v1/chat/completions":
            return 400, _error(f"endpoint {endpoint!r} is not served by this fake", "endpoint")
        stored = self.file(str(body.get("input_file_id")))
        if stored is None:
            return 404, _error(f"No such File object: {body.get('input_file_id')}", "input_file_id")
        if stored.purpose != "batch":
            return 400, _error("the input file's purpose must be 'batch'", "input_file_id")
        requests, errors = _read_requests(stored.data, str(endpoint), token_fields)
        with self._lock:
            script = self._scripts.pop(0) if self._scripts else BatchScript()
            if not errors and script.refuse is not None:
                errors = [{"code": "invalid_request", "message": script.refuse, "line": None}]
            if not errors and self.enqueued_token_quota is not None:
                queued = sum(_enqueued_tokens(job) for job in self.jobs.values() if job.final is None)
                needed = sum(_request_tokens(request["body"]) for request in requests)
                if queued + needed > self.enqueued_token_quota:
                    errors = [
                        {
                            "code": "token_limit_exceeded",
                            "message": f"Enqueued token limit reached: limit {self.enqueued_token_quota}, "
                            f"already enqueued {queued}, this batch {needed}.",
                            "line": None,
                        }
                    ]
            job = BatchJob(
                id=f"batch_{next(self._ids):06d}",
                input_file_id=stored.id,
                endpoint=str(endpoint),
                metadata={str(k): str(v) for k, v in (body.get("metadata") or {}).items()},
                requests=requests,
                script=script,
                started=self._clock(),
                created_at=int(time.time()),
                errors=errors,
            )
            if errors:
                job.final = "failed"
                job.counts = (0, 0, 0)
            self.jobs[job.id] = job
            return 200, self._object(job)

    def retrieve(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            job = self.jobs.get(batch_id)
            if job is None:
                return 404, _error(f"No batch found with id '{batch_id}'.")
            return 200, self._object(job)

    def cancel(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            job = self.jobs.get(batch_id)
            if job is None:
                return 404, _error(f"No batch found with id '{batch_id}'.")
            self._advance(job)
            if job.final is not None:
                return 409, _error(f"Cannot cancel a batch with status '{job.final}'.")
            job.cancel_at = self._clock()
            return 200, self._object(job)

    # -- internals -------------------------------------------------------------------------------

    def _done_by(self, job: BatchJob, at: float) -> int:
        """How many requests the provider had answered by ``at``: evenly over the job's time."""
        span = max(1e-9, job.script.finishes_after_s * self._scale())
        share = min(1.0, max(0.0, (at - job.started) / span))
        done = int(len(job.requests) * share)
        if job.script.expires_after is not None:
            done = min(done, job.script.expires_after)
        return done

    def _advance(self, job: BatchJob) -> str:
        """The job's status now; a job that has just ended has its files written."""
        if job.final is not None:
            return job.final
        now = self._clock()
        if job.cancel_at is not None:
            if now - job.cancel_at < CANCELLING_S * self._scale():
                return "cancelling"
            self._finish(job, "cancelled", self._done_by(job, job.cancel_at))
            return "cancelled"
        if now - job.started >= job.script.finishes_after_s * self._scale():
            expired = job.script.expires_after is not None and job.script.expires_after < len(job.requests)
            self._finish(job, "expired" if expired else "completed", self._done_by(job, now))
            return str(job.final)
        return "in_progress"

    def _finish(self, job: BatchJob, status: str, done: int) -> None:
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
            scripted = job.script.answers.get(custom_id)
            if isinstance(scripted, Fault):
                payload = {"error": {"message": scripted.message, "type": "server_error", "code": None}}
                response = {"status_code": scripted.status, "request_id": line_id, "body": payload}
                failures.append(_line(line_id, custom_id, response, None))
                continue
            reply = scripted or default_reply(request["body"])
            billed = bill(request["body"], reply)
            self._record(billed.prompt_tokens, billed.completion_tokens, custom_id)
            response = {"status_code": 200, "request_id": line_id, "body": completion(request["body"], reply)}
            answers.append(_line(line_id, custom_id, response, None))
        job.output_file_id = self._write(f"{job.id}_output.jsonl", answers)
        job.error_file_id = self._write(f"{job.id}_error.jsonl", failures)
        job.counts = (len(job.requests), len(answers), len(failures))
        job.final = status

    def _write(self, name: str, lines: list[str]) -> str | None:
        if not lines:
            return None
        stored = StoredFile(
            f"file-{next(self._ids):06d}", name, "batch_output", "".join(lines).encode(), int(time.time())
        )
        self.files[stored.id] = stored
        return stored.id

    def _object(self, job: BatchJob) -> dict[str, Any]:
        status = self._advance(job) if job.final is None else job.final
        total, completed, failed = job.counts if job.final is not None else (len(job.requests), 0, 0)
        if job.final is None and status == "in_progress":
            completed = self._done_by(job, self._clock())
        return {
            "id": job.id,
            "object": "batch",
            "endpoint": job.endpoint,
            "errors": {"object": "list", "data": job.errors} if job.errors else None,
            "input_file_id": job.input_file_id,
            "completion_window": COMPLETION_WINDOW,
            "status": status,
            "output_file_id": job.output_file_id,
            "error_file_id": job.error_file_id,
            "created_at": job.created_at,
            "expires_at": job.created_at + int(WINDOW_S),
            "request_counts": {"total": total, "completed": completed, "failed": failed},
            "metadata": job.metadata or None,
        }


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
    """The file's requests, or the validation errors that refuse the whole job (as OpenAI's)."""
    requests: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError:
            errors.append({"code": "invalid_json_line", "message": "This line is not valid JSON.", "line": number})
            continue
        problem = _request_problem(request, endpoint, token_fields, seen)
        if problem is not None:
            errors.append({"code": "invalid_request", "message": problem, "line": number})
            continue
        seen.add(request["custom_id"])
        requests.append(request)
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
    if not isinstance(body, dict) or not body.get("model"):
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
