"""Audit hash (docs/chat-and-templates.md#the-audit-hash) and the per-turn audit record
(docs/chat-and-templates.md#the-per-turn-audit-record).

Normalisation: ``role:content\\n`` for each message, concatenated; every run of whitespace
(newlines included) becomes one space; the first 1000 characters are kept. Hash:
SHA-256(AI_AUDIT_SALT + normalised), hex. Without a salt hashing is disabled (``None``): an
unsalted hash of short texts could be reversed by guessing, so none is better than a weak one.

What is hashed per turn: the exchange, the user's message and the answer the client got
(``user:...\\nassistant:...``), so the record identifies this turn, not the (truncated) start of
a long history. Audit records hold ids, classes, counts and the hash; never message text.

The salt comes from an SSM SecureString through Powertools Parameters (``AI_AUDIT_SALT_PARAMETER``,
5 min cache); ``AI_AUDIT_SALT`` holds it directly for local runs only. Opening Parameters is
lazy, so only a function that configures a salt parameter pays for it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

NORMALISED_MAX_CHARS = 1000
SALT_CACHE_SECONDS = 300
_WHITESPACE = re.compile(r"\s+")


def normalize_for_audit(messages: Sequence[tuple[str, str]]) -> str:
    joined = "".join(f"{role}:{content}\n" for role, content in messages)
    return _WHITESPACE.sub(" ", joined)[:NORMALISED_MAX_CHARS]


class AuditHasher:
    def __init__(self, salt: str | None) -> None:
        self._salt = salt or None

    @property
    def enabled(self) -> bool:
        return self._salt is not None

    def hash_messages(self, messages: Sequence[tuple[str, str]]) -> str | None:
        if self._salt is None:
            return None
        payload = (self._salt + normalize_for_audit(messages)).encode("utf-8", "replace")
        return hashlib.sha256(payload).hexdigest()


def load_audit_salt(direct: str | None, parameter_name: str | None) -> str | None:
    """The salt: ``direct`` (local), else the SSM SecureString ``parameter_name``, else None.

    A named parameter that cannot be read fails loudly (ConfigError at cold start): a configured
    audit trail must not silently lose its hashes.
    """
    if direct:
        return direct
    if not parameter_name:
        return None
    from aws_lambda_powertools.utilities import parameters

    from ..config import ConfigError

    name = parameter_name if parameter_name.startswith("/") else f"/{parameter_name}"
    try:
        value = parameters.get_parameter(name, decrypt=True, max_age=SALT_CACHE_SECONDS)
    except parameters.GetParameterError as error:
        raise ConfigError(f"AI_AUDIT_SALT_PARAMETER {name}: cannot read the audit salt ({error})") from None
    return str(value) if value else None


@dataclass(frozen=True)
class TurnAudit:
    """One assistant turn, for audit: no message text (docs/chat-and-templates.md#the-per-turn-audit-record)."""

    session_id: str
    seq: int
    outcome: str
    error_type: str | None
    error_code: str | None
    retry_count: int
    duration_ms: int
    finish_reason: str | None
    schema_id: str | None
    parse_error_class: str | None
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    model: str
    exchange_hash: str | None
    history_messages: int
    # The Japanese-language policy: whether the model's prose is Japanese (None when the text is the system's own).
    answer_in_japanese: bool | None = None
    # The call's record (llm.accounting.ModelAccount.as_dict): model, prompt version, tokens, billing, cost.
    account: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "seq": self.seq,
            "outcome": self.outcome,
            "errorType": self.error_type,
            "errorCode": self.error_code,
            "retryCount": self.retry_count,
            "durationMs": self.duration_ms,
            "finishReason": self.finish_reason,
            "schemaId": self.schema_id,
            "parseErrorClass": self.parse_error_class,
            "promptTokens": self.prompt_tokens,
            "completionTokens": self.completion_tokens,
            "costUsd": self.cost_usd,
            "model": self.model,
            "exchangeHash": self.exchange_hash,
            "hashAlgorithm": "sha256" if self.exchange_hash else None,
            "historyMessages": self.history_messages,
            "answerInJapanese": self.answer_in_japanese,
            "account": self.account,
        }
