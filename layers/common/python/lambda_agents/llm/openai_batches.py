"""OpenAI's Batch API behind the ``batches.BatchModel`` port (files + batches, 24 h window).

A job's input is a JSONL file, one ``POST /v1/chat/completions`` line per item with the body a
synchronous call would send (``openai_model.openai_arguments``: the same strict schema and token
limit), never streamed. Its answers are two files: the output (each line a whole
``chat.completion``, read into a ``ChatResponse`` by the same code as a synchronous answer) and
the errors (requests that failed, expired or were cancelled), in any line order (the Batch guide:
"the output line order may not match the input line order"). They are read line by line as they
arrive: a 50,000-line output of 3,000-token plans is hundreds of MB, more than the function's
512 MB can hold at once (``benchmarks/batch_collect_bench.py``). The client's retries are off, as
for synchronous calls: the caller runs again on its next schedule.

A create call whose answer is lost may still have made the job, which the provider then runs and
bills: that failure is ``SubmitUnconfirmed``, and ``jobs_since`` lists the account's recent jobs
with their metadata, so the caller finds it by the tag it gave it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal, cast

import httpx2
import openai
from openai.types.chat import ChatCompletion

from ..observability import logger
from .api_key import ApiKeySource
from .batches import (
    MAX_BATCH_BYTES,
    MAX_BATCH_REQUESTS,
    MAX_METADATA_KEY,
    MAX_METADATA_PAIRS,
    MAX_METADATA_VALUE,
    UNREADABLE_LINE,
    BatchAnswer,
    BatchItem,
    BatchJobStatus,
    BatchState,
    SubmitUnconfirmed,
)
from .errors import ProviderConnectionError, ProviderError
from .openai_model import TokenLimitField, openai_arguments, response_from_completion, translate_error

ENDPOINT: Literal["/v1/chat/completions"] = "/v1/chat/completions"
INPUT_NAME = "requests.jsonl"
TIMEOUT_S = 60.0  # an upload of up to 200 MB, a status, a download's next chunk
# The list's pages (the API's largest, "between 1 and 100"), and how many a look-up reads at most:
# 2,000 jobs, far more than a day of this product's cohorts.
LIST_PAGE = 100
MAX_LIST_PAGES = 20


class OpenAIBatchModel:
    def __init__(
        self,
        api_key: str | ApiKeySource,
        model: str,
        base_url: str | None = None,
        *,
        token_limit_field: TokenLimitField = "max_completion_tokens",
        client: openai.OpenAI | None = None,
    ) -> None:
        self._model = model
        self._keys = api_key if isinstance(api_key, ApiKeySource) else ApiKeySource(key=api_key)
        self._base_url = base_url
        self._token_limit_field = token_limit_field
        self._client = client

    @property
    def model_name(self) -> str:
        return self._model

    def _openai(self) -> openai.OpenAI:
        if self._client is None:
            self._client = openai.OpenAI(
                api_key=self._keys.get(), base_url=self._base_url, max_retries=0, timeout=TIMEOUT_S
            )
        return self._client

    def _line(self, item: BatchItem) -> bytes:
        record = {
            "custom_id": item.custom_id,
            "method": "POST",
            "url": ENDPOINT,
            "body": openai_arguments(item.request, self._model, self._token_limit_field),
        }
        return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")

    def request_bytes(self, item: BatchItem) -> int:
        return len(self._line(item))

    def input_file(self, items: Sequence[BatchItem]) -> bytes:
        """The job's JSONL: one synchronous request body per item."""
        if not items:
            raise ValueError("a batch job needs at least one request")
        if len(items) > MAX_BATCH_REQUESTS:
            raise ValueError(f"a batch job holds at most {MAX_BATCH_REQUESTS} requests, got {len(items)}")
        ids = [item.custom_id for item in items]
        if len(set(ids)) != len(ids):
            raise ValueError("custom_id values must be unique within a job")
        data = b"".join(self._line(item) for item in items)
        if len(data) > MAX_BATCH_BYTES:
            raise ValueError(f"a batch job's file holds at most {MAX_BATCH_BYTES} bytes, got {len(data)}")
        return data

    def submit(self, items: Sequence[BatchItem], metadata: Mapping[str, str]) -> BatchJobStatus:
        _check_metadata(metadata)
        data = self.input_file(items)
        try:
            uploaded = self._openai().files.create(file=(INPUT_NAME, data), purpose="batch")
        except openai.APIError as error:
            raise translate_error(error) from error  # no job without its file
        try:
            batch = self._openai().batches.create(
                input_file_id=uploaded.id, endpoint=ENDPOINT, completion_window="24h", metadata=dict(metadata)
            )
        except openai.APIError as error:
            translated = translate_error(error)
            if _may_have_been_accepted(error):
                raise SubmitUnconfirmed(f"the job may exist: {translated}") from error
            raise translated from error
        return _status(batch)

    def status(self, batch_id: str) -> BatchJobStatus:
        try:
            return _status(self._openai().batches.retrieve(batch_id))
        except openai.APIError as error:
            raise translate_error(error) from error

    def cancel(self, batch_id: str) -> BatchJobStatus:
        try:
            return _status(self._openai().batches.cancel(batch_id))
        except openai.APIError as error:
            raise translate_error(error) from error

    def answers(self, batch_id: str) -> Iterator[BatchAnswer]:
        try:
            batch = self._openai().batches.retrieve(batch_id)
        except openai.APIError as error:
            raise translate_error(error) from error
        return self._read(file_id for file_id in (batch.output_file_id, batch.error_file_id) if file_id)

    def _read(self, file_ids: Iterator[str]) -> Iterator[BatchAnswer]:
        """Each file's lines as they arrive (``with_streaming_response``: the body is not read
        whole); a consumer that stops early closes the download with the generator."""
        for file_id in file_ids:
            try:
                with self._openai().files.with_streaming_response.content(file_id) as response:
                    for line in response.iter_lines():
                        if line.strip():
                            yield _answer(line, self._model)
            except openai.APIError as error:
                raise translate_error(error) from error
            except httpx2.HTTPError as error:  # the body's transport failed mid-way
                raise ProviderConnectionError(f"the file {file_id} stopped arriving: {error}") from error

    def jobs_since(self, created_after: int) -> list[BatchJobStatus]:
        """Page by page, newest first as OpenAI lists them, until a page holds only older jobs. The
        list's order is not documented: a provider listing otherwise is read up to
        ``MAX_LIST_PAGES`` pages, and a job beyond them is found by a later run, or never (logged)."""
        found: list[BatchJobStatus] = []
        try:
            page = self._openai().batches.list(limit=LIST_PAGE)
            for _ in range(MAX_LIST_PAGES):
                found += [_status(batch) for batch in page.data if batch.created_at >= created_after]
                if all(batch.created_at < created_after for batch in page.data) or not page.has_next_page():
                    return found
                page = page.get_next_page()
        except openai.APIError as error:
            raise translate_error(error) from error
        logger.warning(
            "the batch list was read only in part", extra={"pages": MAX_LIST_PAGES, "createdAfter": created_after}
        )
        return found


def _status(batch: Any) -> BatchJobStatus:
    counts = batch.request_counts
    found = (batch.errors.data or []) if batch.errors is not None else []
    errors = tuple(
        f"{error.code or 'error'}: {error.message or ''}" + (f" (line {error.line})" if error.line else "")
        for error in found
    )
    return BatchJobStatus(
        batch_id=batch.id,
        state=cast(BatchState, batch.status),
        total=counts.total if counts else 0,
        completed=counts.completed if counts else 0,
        failed=counts.failed if counts else 0,
        errors=errors,
        error_codes=tuple(str(error.code or "error") for error in found),
        created_at=int(batch.created_at),
        metadata={str(key): str(value) for key, value in (batch.metadata or {}).items()},
    )


def _may_have_been_accepted(error: openai.APIError) -> bool:
    """Whether the provider may have made the job though the create call failed: its answer never
    came (a timeout, a connection that dropped) or was a server error. A 4xx is a refusal."""
    if isinstance(error, openai.APIConnectionError):  # APITimeoutError included
        return True
    return isinstance(error, openai.APIStatusError) and error.status_code >= 500


def _check_metadata(metadata: Mapping[str, str]) -> None:
    if len(metadata) > MAX_METADATA_PAIRS:
        raise ValueError(f"a job's metadata holds at most {MAX_METADATA_PAIRS} pairs, got {len(metadata)}")
    for key, value in metadata.items():
        if len(key) > MAX_METADATA_KEY or len(value) > MAX_METADATA_VALUE:
            raise ValueError(
                f"metadata keys hold at most {MAX_METADATA_KEY} characters and values {MAX_METADATA_VALUE}: {key!r}"
            )


def _answer(line: str, model: str) -> BatchAnswer:
    """One output or error line; a line the provider wrote wrong is an answer-less item with no
    ``custom_id``, not a crash (its text stays out of the error: it may hold a user's plan)."""
    try:
        record = json.loads(line)
        custom_id = str(record["custom_id"])
    except (ValueError, KeyError, TypeError):
        return BatchAnswer("", None, f"{UNREADABLE_LINE}: not a result line ({len(line)} characters)")
    response = record.get("response") or {}
    error = record.get("error")
    if error:
        return BatchAnswer(custom_id, None, f"{error.get('code')}: {error.get('message')}")
    status = response.get("status_code")
    body = response.get("body")
    if status != 200 or not isinstance(body, dict):
        message = (body or {}).get("error", {}).get("message") if isinstance(body, dict) else None
        return BatchAnswer(custom_id, None, f"status {status}: {message}")
    try:
        return BatchAnswer(custom_id, response_from_completion(ChatCompletion.model_validate(body), model, None))
    except (ValueError, ProviderError) as failure:
        return BatchAnswer(custom_id, None, f"unreadable answer: {failure}")
