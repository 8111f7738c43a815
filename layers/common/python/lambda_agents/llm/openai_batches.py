"""OpenAI's Batch API behind the ``batches.BatchModel`` port (files + batches, 24 h window).

A job's input is a JSONL file, one ``POST /v1/chat/completions`` line per item with the body a
synchronous call would send (``openai_model.openai_arguments``: the same strict schema and token
limit), never streamed. Its answers are two files: the output (each line a whole
``chat.completion``, read into a ``ChatResponse`` by the same code as a synchronous answer) and
the errors (requests that failed, expired or were cancelled). The client's retries are off, as
for synchronous calls: the caller runs again on its next schedule.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

import openai
from openai.types.chat import ChatCompletion

from .api_key import ApiKeySource
from .batches import MAX_BATCH_BYTES, MAX_BATCH_REQUESTS, BatchAnswer, BatchItem, BatchJobStatus, BatchState
from .errors import ProviderError
from .openai_model import TokenLimitField, openai_arguments, response_from_completion, translate_error

ENDPOINT: Literal["/v1/chat/completions"] = "/v1/chat/completions"
INPUT_NAME = "requests.jsonl"
TIMEOUT_S = 60.0  # an upload of up to 200 MB, a status, a download


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

    def input_file(self, items: Sequence[BatchItem]) -> bytes:
        """The job's JSONL: one synchronous request body per item."""
        if not items:
            raise ValueError("a batch job needs at least one request")
        if len(items) > MAX_BATCH_REQUESTS:
            raise ValueError(f"a batch job holds at most {MAX_BATCH_REQUESTS} requests, got {len(items)}")
        ids = [item.custom_id for item in items]
        if len(set(ids)) != len(ids):
            raise ValueError("custom_id values must be unique within a job")
        lines = [
            json.dumps(
                {
                    "custom_id": item.custom_id,
                    "method": "POST",
                    "url": ENDPOINT,
                    "body": openai_arguments(item.request, self._model, self._token_limit_field),
                },
                ensure_ascii=False,
            )
            for item in items
        ]
        data = ("\n".join(lines) + "\n").encode("utf-8")
        if len(data) > MAX_BATCH_BYTES:
            raise ValueError(f"a batch job's file holds at most {MAX_BATCH_BYTES} bytes, got {len(data)}")
        return data

    def submit(self, items: Sequence[BatchItem], metadata: Mapping[str, str]) -> BatchJobStatus:
        data = self.input_file(items)
        try:
            uploaded = self._openai().files.create(file=(INPUT_NAME, data), purpose="batch")
            batch = self._openai().batches.create(
                input_file_id=uploaded.id, endpoint=ENDPOINT, completion_window="24h", metadata=dict(metadata)
            )
        except openai.APIError as error:
            raise translate_error(error) from error
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

    def answers(self, batch_id: str) -> list[BatchAnswer]:
        try:
            batch = self._openai().batches.retrieve(batch_id)
            found: list[BatchAnswer] = []
            for file_id in (batch.output_file_id, batch.error_file_id):
                if file_id:
                    text = self._openai().files.content(file_id).text
                    found.extend(_answer(line, self._model) for line in text.splitlines() if line.strip())
            return found
        except openai.APIError as error:
            raise translate_error(error) from error


def _status(batch: Any) -> BatchJobStatus:
    counts = batch.request_counts
    errors = tuple(
        f"{error.code or 'error'}: {error.message or ''}" + (f" (line {error.line})" if error.line else "")
        for error in ((batch.errors.data or []) if batch.errors is not None else [])
    )
    return BatchJobStatus(
        batch_id=batch.id,
        state=cast(BatchState, batch.status),
        total=counts.total if counts else 0,
        completed=counts.completed if counts else 0,
        failed=counts.failed if counts else 0,
        errors=errors,
    )


def _answer(line: str, model: str) -> BatchAnswer:
    """One output or error line; a line the provider wrote wrong is an answer-less item, not a crash."""
    try:
        record = json.loads(line)
        custom_id = str(record["custom_id"])
    except (ValueError, KeyError, TypeError):
        return BatchAnswer("", None, f"unreadable line: {line[:200]}")
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
