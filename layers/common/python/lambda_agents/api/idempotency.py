"""Retry-safe POSTs: an optional ``Idempotency-Key`` header, Powertools idempotency behind it,
and the one mapping of its errors to HTTP answers.

A client that timed out and sends the same request again with the same key gets the first
answer back without a second model call. Only successful answers are kept: a failed request
(4xx / 5xx) releases its key, so the retry runs again. The same key with a different payload is
a 409, as is a retry that arrives while the first request still runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Header
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyPersistenceLayerError,
    IdempotencyValidationError,
)

from ..observability import logger
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


class IdempotentCall:
    """``run(payload)`` at most once per key: ``payload`` holds the caller, the resource, the
    ``idempotencyKey`` and the fields the key must not be reused with (``validated_field``)."""

    def __init__(
        self,
        run: Callable[[dict[str, Any]], dict[str, Any]],
        *,
        table_name: str,
        key_fields: tuple[str, ...],
        validated_field: str,
        expires_after_s: int = 24 * 3600,
    ) -> None:
        self.config = IdempotencyConfig(
            event_key_jmespath="[" + ", ".join(key_fields) + "]",
            payload_validation_jmespath=validated_field,
            expires_after_seconds=expires_after_s,
            raise_on_no_idempotency_key=True,
        )
        self.persistence = DynamoDBPersistenceLayer(table_name=table_name)

        @idempotent_function(data_keyword_argument="payload", persistence_store=self.persistence, config=self.config)  # type: ignore[untyped-decorator]
        def run_once(payload: dict[str, Any]) -> dict[str, Any]:
            return run(payload)

        self._run_once: Callable[..., dict[str, Any]] = run_once

    def register_lambda_context(self, context: Any) -> None:
        """Lets Powertools expire an in-progress record when the invocation times out."""
        self.config.register_lambda_context(context)

    def __call__(self, payload: dict[str, Any]) -> dict[str, Any]:
        try:
            return self._run_once(payload=payload)
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
        except IdempotencyPersistenceLayerError:
            logger.exception("idempotency store failed")
            raise ServiceUnavailable(
                "the request could not be recorded; send it again", headers={"Retry-After": str(RETRY_AFTER_S)}
            ) from None
