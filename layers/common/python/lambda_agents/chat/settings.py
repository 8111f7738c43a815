"""ChatFunction's settings, read from the environment once at cold start (docs/chat-and-templates.md#configuration).

| variable | default | meaning |
| --- | --- | --- |
| CHAT_TABLE | (required) | the ChatTable |
| IDEMPOTENCY_TABLE | (required) | records of messages sent with an Idempotency-Key |
| CHAT_HISTORY_WINDOW | 12 | history window N (messages) |
| CHAT_MODEL_CONTEXT_LIMIT | 128000 | modelContextLimit of the token budget |
| OPENAI_MAX_TOKENS | 1200 | responseMaxTokens of the token budget and the call's max_tokens |
| CHAT_RETRY_BACKOFF_SECONDS | 1.5 | the wait before the one retry |
| CHAT_RATE_LIMIT_PER_WINDOW / CHAT_RATE_LIMIT_WINDOW_SECONDS | 20 / 60 | per-user limit, in any window (1-1000) |
| CHAT_TTL_DAYS | 90 | a session's items expire this long after its last message |
| AI_AUDIT_SALT_PARAMETER | unset | SSM SecureString holding the audit salt; unset: hashing off |
| AI_AUDIT_SALT | unset | the salt itself, for local runs only |
| TEMPLATES_TABLE | (sessions routes) | templates made from a deleted session lose their reference to it |
| CHAT_ANSWERS_QUEUE_URL | unset | ChatAnswerFunction's queue (turns whose answer does not fit in the request) |
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .history import SAFETY_MARGIN_TOKENS
from .rate_limit import MAX_LIMIT as RATE_LIMIT_MAX

MIN_CONTEXT_HEADROOM = 4000  # system prompt + the longest user message, with room for history


class ChatEnvironment(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    chat_table: str = Field(alias="CHAT_TABLE", min_length=1)
    idempotency_table: str = Field(alias="IDEMPOTENCY_TABLE", min_length=1)
    history_window: int = Field(default=12, alias="CHAT_HISTORY_WINDOW", ge=0, le=50)
    model_context_limit: int = Field(default=128_000, alias="CHAT_MODEL_CONTEXT_LIMIT", ge=4096, le=2_000_000)
    max_tokens: int = Field(default=1200, alias="OPENAI_MAX_TOKENS", ge=256, le=32_768)
    retry_backoff_s: float = Field(default=1.5, alias="CHAT_RETRY_BACKOFF_SECONDS", ge=0, le=10)
    rate_limit: int = Field(default=20, alias="CHAT_RATE_LIMIT_PER_WINDOW", ge=1, le=RATE_LIMIT_MAX)
    rate_window_s: int = Field(default=60, alias="CHAT_RATE_LIMIT_WINDOW_SECONDS", ge=1, le=86_400)
    ttl_days: int = Field(default=90, alias="CHAT_TTL_DAYS", ge=1, le=3650)
    audit_salt: str | None = Field(default=None, alias="AI_AUDIT_SALT", repr=False)
    audit_salt_parameter: str | None = Field(default=None, alias="AI_AUDIT_SALT_PARAMETER")
    answers_queue_url: str | None = Field(default=None, alias="CHAT_ANSWERS_QUEUE_URL")

    @model_validator(mode="after")
    def _budget_leaves_room(self) -> ChatEnvironment:
        spare = self.model_context_limit - self.max_tokens - SAFETY_MARGIN_TOKENS
        if spare < MIN_CONTEXT_HEADROOM:
            raise ValueError(
                f"CHAT_MODEL_CONTEXT_LIMIT ({self.model_context_limit}) leaves {spare} tokens after OPENAI_MAX_TOKENS "
                f"and the safety margin; at least {MIN_CONTEXT_HEADROOM} are needed"
            )
        return self


class SessionsEnvironment(BaseModel):
    """What reading, listing and deleting sessions need; read on the first such request only, so
    the message route does not depend on it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    chat_table: str = Field(alias="CHAT_TABLE", min_length=1)
    idempotency_table: str = Field(alias="IDEMPOTENCY_TABLE", min_length=1)
    templates_table: str = Field(alias="TEMPLATES_TABLE", min_length=1)
