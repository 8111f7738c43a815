"""Retry-safe POSTs: an optional ``Idempotency-Key`` header, Powertools idempotency behind it,
and the one mapping of its errors to HTTP answers.

A client that timed out and sends the same request again with the same key gets the first
answer back without a second model call. Only successful answers are kept: a failed request
(4xx / 5xx) releases its key, so the retry runs again, and so does an answer the caller says not
to keep (``keep``: the chat's fallback answer, sent when the provider was down) although it is
answered normally, so a retry after the provider recovers gets a real answer. The same key with
a different payload is a 409, as is a retry that arrives while the first request still runs.

An answer kept may stop holding later: a 202 names a turn the worker answers after the request,
and that turn may end without its answer (the chat's fallback answer, an interview turn the worker
gave up on). Powertools stores the 202 when the request returns, which may be after the worker has
already ended the turn, so nothing the worker deletes can be relied on; instead every answer read
back from the store is checked (``stale``) and, when it no longer holds, its record is deleted
(only if it still holds that answer) and the request runs again, as after a failed one.

Powertools keeps whatever the function returns and deletes the record when it raises, so an
answer not to keep leaves the function inside ``_NotKept`` and is unwrapped here; an answer it
reads back from its store comes out of its ``response_hook`` inside ``_Replayed``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Header

from ..observability import logger
from ..storage.dynamodb import batch_delete, delete_if_unchanged
from .errors import Conflict, ServiceUnavailable

HEADER = "Idempotency-Key"
KEY_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"
RETRY_AFTER_S = 5
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias=HEADER,
        pattern=KEY_PATTERN,
        description="Makes the request safe to retry: the same key returns the first answer without a second run.",
    ),
]


class _NotKept(Exception):
    """Carries an answer out of the idempotent function so that Powertools deletes its record."""

    def __init__(self, answer: dict[str, Any]) -> None:
        super().__init__("answer not kept")
        self.answer = answer


class _Replayed:
    """An answer read back from the store (Powertools' ``response_hook``), not one just made."""

    def __init__(self, answer: dict[str, Any], record_id: str, stored: str | None) -> None:
        self.answer = answer
        self.record_id = record_id
        self.stored = stored  # the record's answer as stored: its deletion is conditioned on it


class IdempotentCall:
    """``run(payload)`` at most once per key: ``payload`` holds the caller, the resource, the
    ``idempotencyKey`` and the fields the key must not be reused with (``validated_field``).

    Powertools idempotency is imported and wired on the first keyed request, not at cold start:
    most requests carry no key, and the import costs ~20 ms.
    """

    def __init__(
        self,
        run: Callable[[dict[str, Any]], dict[str, Any]],
        *,
        table_name: str,
        key_fields: tuple[str, ...],
        validated_field: str,
        expires_after_s: int = 24 * 3600,
        key_prefix: str | None = None,
        keep: Callable[[dict[str, Any]], bool] = lambda answer: True,
        stale: Callable[[dict[str, Any], dict[str, Any]], bool] = lambda payload, answer: False,
    ) -> None:
        """``keep(answer)``: whether a new answer is kept under the key; ``stale(payload, answer)``:
        whether a kept answer no longer holds, so that a retry runs again (module docstring)."""
        self._run = run
        self._keep = keep
        self._stale = stale
        self._table_name = table_name
        self._key_fields = key_fields
        self._validated_field = validated_field
        self._expires_after_s = expires_after_s
        self._key_prefix = key_prefix
        self._context: Any = None
        self._config: Any = None
        self._persistence: Any = None
        self._run_once: Callable[..., dict[str, Any] | _Replayed] | None = None

    def register_lambda_context(self, context: Any) -> None:
        """Lets Powertools expire an in-progress record when the invocation times out."""
        self._context = context
        if self._config is not None:
            self._config.register_lambda_context(context)

    def _wired(self) -> Callable[..., dict[str, Any] | _Replayed]:
        if self._run_once is None:
            from aws_lambda_powertools.utilities.idempotency import (
                DynamoDBPersistenceLayer,
                IdempotencyConfig,
                idempotent_function,
            )

            self._config = IdempotencyConfig(
                event_key_jmespath="[" + ", ".join(self._key_fields) + "]",
                payload_validation_jmespath=self._validated_field,
                expires_after_seconds=self._expires_after_s,
                raise_on_no_idempotency_key=True,
                response_hook=lambda answer, record: _Replayed(answer, record.idempotency_key, record.response_data),
            )
            if self._context is not None:
                self._config.register_lambda_context(self._context)
            persistence = DynamoDBPersistenceLayer(table_name=self._table_name)
            run, keep = self._run, self._keep

            @idempotent_function(  # type: ignore[untyped-decorator]
                data_keyword_argument="payload",
                persistence_store=persistence,
                config=self._config,
                key_prefix=self._key_prefix,
            )
            def run_once(payload: dict[str, Any]) -> dict[str, Any]:
                answer = run(payload)
                if not keep(answer):
                    raise _NotKept(answer)
                return answer

            self._persistence = persistence
            self._run_once = run_once
        return self._run_once

    def record_id(self, payload: dict[str, Any]) -> str | None:
        """The id of the record ``payload``'s answer is kept under, computed by the same Powertools
        persistence layer and configuration a call uses (no copy of its hashing to drift from it),
        so data deleted later can take its retry records with it."""
        run_once = self._wired()
        persistence = self._persistence
        if self._key_prefix is not None:
            persistence.configure(self._config, key_prefix=self._key_prefix)
        else:
            persistence.configure(self._config, function_name=f"{run_once.__module__}.{run_once.__qualname__}")
        record: str | None = persistence._get_hashed_idempotency_key(data=payload)
        return record

    def forget(self, payloads: Iterable[dict[str, Any]]) -> int:
        """Delete the records stored for these payloads (the key fields are enough); returns how
        many ids were deleted. A record holds the answer it replays, so data deleted with its
        resource must take its records along."""
        ids = {self.record_id(payload) for payload in payloads}
        keys = [{self._persistence.key_attr: record_id} for record_id in sorted(i for i in ids if i is not None)]
        return batch_delete(self._table_name, keys)

    def __call__(self, payload: dict[str, Any]) -> dict[str, Any]:
        answer = self._once(payload)
        if not isinstance(answer, _Replayed):
            return answer
        if not self._stale(payload, answer.answer):
            return answer.answer
        logger.info("kept answer no longer holds: run again", extra={"idempotency_record": answer.record_id})
        # Deleted only while it still holds that answer: a retry that ran meanwhile is not undone.
        delete_if_unchanged(
            self._table_name, {self._persistence.key_attr: answer.record_id}, self._persistence.data_attr, answer.stored
        )
        again = self._once(payload)
        return again.answer if isinstance(again, _Replayed) else again

    def _once(self, payload: dict[str, Any]) -> dict[str, Any] | _Replayed:
        """One pass through Powertools, its errors mapped to HTTP answers."""
        run_once = self._wired()
        from aws_lambda_powertools.utilities.idempotency.exceptions import (
            IdempotencyAlreadyInProgressError,
            IdempotencyPersistenceLayerError,
            IdempotencyValidationError,
        )

        try:
            return run_once(payload=payload)
        except _NotKept as not_kept:
            return not_kept.answer
        except IdempotencyAlreadyInProgressError:
            raise Conflict(
                f"a request with this {HEADER} is still running",
                code="REQUEST_IN_PROGRESS",
                headers={"Retry-After": "2"},
            ) from None
        except IdempotencyValidationError:
            raise Conflict(
                f"this {HEADER} was already used with a different request", code="IDEMPOTENCY_KEY_REUSED"
            ) from None
        except IdempotencyPersistenceLayerError as error:
            if isinstance(error.__context__, _NotKept):
                # The answer exists and is stored; only its key could not be released (it expires).
                logger.warning("idempotency record of an answer not kept could not be deleted")
                return error.__context__.answer
            logger.exception("idempotency store failed")
            raise ServiceUnavailable(
                "the request could not be recorded; send it again", headers={"Retry-After": str(RETRY_AFTER_S)}
            ) from None
