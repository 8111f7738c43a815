"""Settings read from the environment once at cold start.

Every function validates its settings with a pydantic model; a missing or malformed variable
fails at start-up with a message that names the variable, instead of a KeyError mid-request.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

SettingsT = TypeVar("SettingsT", bound=BaseModel)


class ConfigError(RuntimeError):
    """A required environment variable is missing or malformed."""


OutputModeName = Literal["json_schema", "tool", "prompted"]


class FallbackModelSettings(BaseModel):
    """One model after the first in the chain (an item of OPENAI_FALLBACK_MODELS): its own endpoint,
    key, way of being given the schema, pace and limits; what it leaves out is the first model's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(min_length=1)
    baseUrl: str | None = None  # noqa: N815 - the setting's JSON names
    apiKeyParameter: str | None = None  # noqa: N815
    apiKey: str | None = Field(default=None, repr=False)  # noqa: N815 - local runs only
    output: OutputModeName = "json_schema"
    tokensPerSecond: float | None = Field(default=None, gt=0, le=10_000)  # noqa: N815
    firstTokenSeconds: float | None = Field(default=None, ge=0, le=600)  # noqa: N815
    requestsPerMinute: int = Field(default=0, ge=0, le=100_000_000)  # noqa: N815
    tokensPerMinute: int = Field(default=0, ge=0, le=10_000_000_000)  # noqa: N815
    tokenLimitField: Literal["max_completion_tokens", "max_tokens"] | None = None  # noqa: N815
    # Whether its endpoint has OpenAI's Batch API (files + batches): false leaves it out of the
    # Batch API path's chain (llm/batch_chain.py); the synchronous chain still has it.
    batch: bool = True


class AccountLimitSettings(BaseModel):
    """The account's rate limits for the model (0: not known, learned from the provider's
    x-ratelimit headers; llm/rate_budget.py) and a function's part of them: read by every function
    that calls the model, and by the nudge scheduler, which plans the fan-out's starts from the same
    variables (set limits only)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    requests_per_minute: int = Field(default=0, alias="OPENAI_REQUESTS_PER_MINUTE", ge=0, le=100_000_000)
    tokens_per_minute: int = Field(default=0, alias="OPENAI_TOKENS_PER_MINUTE", ge=0, le=10_000_000_000)
    rate_limit_share: float = Field(default=1.0, alias="OPENAI_RATE_LIMIT_SHARE", gt=0, le=1)


class LLMSettings(AccountLimitSettings):
    """How the functions that call an LLM reach it, the mock / openai switch included
    (docs/engine.md#offline-model)."""

    # Built on first validation: the functions that call no model never pay for it at cold start.
    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore", defer_build=True)

    mode: Literal["mock", "openai"] = Field(default="mock", alias="AI_AGENT_MODE")
    model: str = Field(default="gpt-4o-2024-08-06", alias="OPENAI_MODEL", min_length=1)
    base_url: str | None = Field(default=None, alias="OPENAI_BASE_URL")
    api_key: str | None = Field(default=None, alias="OPENAI_API_KEY", repr=False)
    api_key_parameter: str | None = Field(default=None, alias="OPENAI_API_KEY_PARAMETER")
    # Answers stream by default; false for OpenAI-compatible servers that cannot stream.
    stream: bool = Field(default=True, alias="OPENAI_STREAM")
    # A whole answer is bounded by the caller's deadline only; these bound its parts.
    connect_timeout_s: float = Field(default=5.0, alias="OPENAI_CONNECT_TIMEOUT_SECONDS", gt=0, le=60)
    first_token_timeout_s: float = Field(default=30.0, alias="OPENAI_FIRST_TOKEN_TIMEOUT_SECONDS", gt=0, le=900)
    stall_timeout_s: float = Field(default=15.0, alias="OPENAI_STALL_TIMEOUT_SECONDS", gt=0, le=900)
    # The model's pace until it has answered in this container (then it is learned): gpt-4o's
    # typical 60 tokens/s after a 1.2 s first token; a reasoning model thinks for tens of seconds.
    tokens_per_s: float = Field(default=60.0, alias="OPENAI_TOKENS_PER_SECOND", gt=0, le=10_000)
    first_token_s: float = Field(default=1.2, alias="OPENAI_FIRST_TOKEN_SECONDS", ge=0, le=600)
    # The account's limits and this function's share (AccountLimitSettings) are split between its
    # containers (llm/rate_budget.py).
    rate_limit_containers: int = Field(default=1, alias="OPENAI_RATE_LIMIT_CONTAINERS", ge=1, le=10_000)
    # Reasoning models refuse max_tokens; some OpenAI-compatible servers know only max_tokens.
    token_limit_field: Literal["max_completion_tokens", "max_tokens"] = Field(
        default="max_completion_tokens", alias="OPENAI_TOKEN_LIMIT_FIELD"
    )
    # How the first model is given a structured answer's schema (llm/model_chain.py).
    output_mode: OutputModeName = Field(default="json_schema", alias="OPENAI_OUTPUT_MODE")
    # The models tried, in order, when the one before fails (a JSON list of FallbackModelSettings).
    fallback_models: tuple[FallbackModelSettings, ...] = Field(default=(), alias="OPENAI_FALLBACK_MODELS")
    # Their key, for those that name none of their own (the template grants reading this one).
    fallback_api_key_parameter: str | None = Field(default=None, alias="OPENAI_FALLBACK_API_KEY_PARAMETER")
    # A model that failed this many times in a row is left alone this long (0 failures: never).
    breaker_failures: int = Field(default=5, alias="OPENAI_BREAKER_FAILURES", ge=0, le=1000)
    breaker_cooldown_s: float = Field(default=30.0, alias="OPENAI_BREAKER_COOLDOWN_SECONDS", gt=0, le=3600)

    @field_validator("fallback_models", mode="before")
    @classmethod
    def _fallback_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError as error:
                raise ValueError(f"must be a JSON list of models: {error}") from None
            if not isinstance(value, list):
                raise ValueError("must be a JSON list of models")
        return value


class SocketSettings(BaseModel):
    """Where the functions that push an answer's frames reach the WebSocket API (docs/api.md#websocket):
    its connections table and its stage's ``@connections`` endpoint. Both unset: a deployment
    without the WebSocket API, whose answers go to REST clients only (``live.NoLiveChannel``)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    connections_table: str | None = Field(default=None, alias="CONNECTIONS_TABLE", min_length=1)
    # https://{api-id}.execute-api.{region}.amazonaws.com/v1 (the stage); http only on this machine.
    endpoint: str | None = Field(
        default=None,
        alias="SOCKET_API_ENDPOINT",
        pattern=r"^(https://[a-z0-9.-]+(:[0-9]+)?|http://(127\.0\.0\.1|localhost)(:[0-9]+)?)(/[A-Za-z0-9_.-]+)*$",
    )

    @model_validator(mode="after")
    def _both_or_neither(self) -> SocketSettings:
        if (self.connections_table is None) != (self.endpoint is None):
            raise ValueError("CONNECTIONS_TABLE and SOCKET_API_ENDPOINT go together: set both or neither")
        return self

    @property
    def configured(self) -> bool:
        return self.endpoint is not None


class PriceRow(BaseModel):
    """One row of ``MODEL_PRICES``: US dollars per million tokens (llm/prices.py's ``ModelPrice``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: float = Field(ge=0, le=10_000)
    cachedInput: float = Field(ge=0, le=10_000)  # noqa: N815 - the setting's JSON names
    output: float = Field(ge=0, le=10_000)

    @model_validator(mode="after")
    def _cached_not_dearer(self) -> PriceRow:
        if self.cachedInput > self.input:
            raise ValueError("cachedInput cannot cost more than input")
        return self


PRICES_EXAMPLE = '{"gpt-4o": {"input": 2.5, "cachedInput": 1.25, "output": 10}}'


def model_price_rows(environ: Mapping[str, str] | None = None) -> dict[str, PriceRow]:
    """The rows ``MODEL_PRICES`` replaces or adds in the price table (``llm.prices.price_table``),
    so a price change needs no release: a JSON object of model -> ``{"input", "cachedInput",
    "output"}`` in dollars per million tokens (Batch and flex bill half of each). Unset or empty:
    none. ``ConfigError`` names the variable and the row when it is malformed."""
    raw = (os.environ if environ is None else environ).get("MODEL_PRICES", "").strip()
    if not raw:
        return {}
    try:
        given = json.loads(raw)
    except ValueError as error:
        raise ConfigError(f"environment variable MODEL_PRICES: not JSON ({error}); e.g. {PRICES_EXAMPLE}") from None
    if not isinstance(given, dict):
        raise ConfigError(f"environment variable MODEL_PRICES: must be a JSON object such as {PRICES_EXAMPLE}")
    rows: dict[str, PriceRow] = {}
    for name, row in given.items():
        if not name.strip():
            raise ConfigError("environment variable MODEL_PRICES: a model name is empty")
        try:
            rows[name] = PriceRow.model_validate(row)
        except ValidationError as error:
            detail = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'row'}: {e['msg']}" for e in error.errors())
            raise ConfigError(f"environment variable MODEL_PRICES: {name!r}: {detail}") from None
    return rows


def load_settings(model: type[SettingsT], environ: Mapping[str, str] | None = None) -> SettingsT:
    """Validate ``model`` from the environment; empty strings count as unset."""
    env = os.environ if environ is None else environ
    values = {key: value for key, value in env.items() if value != ""}
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            name = ".".join(str(part) for part in error["loc"]) or "<environment>"
            problems.append(f"environment variable {name}: {error['msg']}")
        raise ConfigError("; ".join(problems)) from None
