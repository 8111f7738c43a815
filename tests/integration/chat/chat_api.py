"""Helpers for driving ChatFunction and ProcessTemplatesFunction end to end: moto tables created
from template.yaml itself, the handlers' cached ports cleared, API Gateway-shaped events with the
identity in ``requestContext.authorizer.claims`` only."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from functools import partial
from typing import Any

import pytest
from boto3.dynamodb.types import TypeDeserializer
from lambda_agents.storage.dynamodb import dynamodb_resource

from devtools.runner_lambda import LambdaContext
from functions.chat import app as chat_app
from functions.process_templates import app as templates_app
from tests.support import api_events
from tests.support.api_events import Answer
from tests.support.lambda_invocation import function_context
from tests.support.model_speeds import fake_server_environment
from tests.support.moto_tables import tables_on_moto

TABLES = ["ChatTable", "ChatIdempotencyTable", "ProcessTemplatesTable"]
ENVIRONMENT = {
    "CHAT_TABLE": "ChatTable",
    "IDEMPOTENCY_TABLE": "ChatIdempotencyTable",
    "TEMPLATES_TABLE": "ProcessTemplatesTable",
    "CHAT_RETRY_BACKOFF_SECONDS": "0.01",
}
CLEARED = (
    "OPENAI_FIRST_TOKEN_TIMEOUT_SECONDS",
    "OPENAI_STALL_TIMEOUT_SECONDS",
    "OPENAI_TOKENS_PER_SECOND",
    "OPENAI_FIRST_TOKEN_SECONDS",
    "AI_AUDIT_SALT",
    "AI_AUDIT_SALT_PARAMETER",
    "CHAT_RATE_LIMIT_PER_WINDOW",
)


def clear_caches() -> None:
    dynamodb_resource.cache_clear()
    chat_app.dependencies.reset()
    templates_app.dependencies.reset()


def chat_tables(
    monkeypatch: pytest.MonkeyPatch, reset_ports: Callable[[], None] = clear_caches, daily_budget: int = 0
) -> AbstractContextManager[Any]:
    """The chat and template tables on moto (``with chat_tables(monkeypatch) as client``)."""
    wiring = {"environment": ENVIRONMENT, "cleared": CLEARED, "reset_ports": reset_ports}
    return tables_on_moto(monkeypatch, TABLES, daily_budget=daily_budget, **wiring)


def use_fake_openai(monkeypatch: pytest.MonkeyPatch, base_url: str, timeout_s: float = 5.0) -> None:
    for name, value in fake_server_environment(base_url, timeout_s).items():
        monkeypatch.setenv(name, value)
    chat_app.dependencies.reset()


def context(name: str = "ChatFunction", timeout_s: int = 30) -> LambdaContext:
    return function_context(name, timeout_s)


# A chat route's event (``tests.support.api_events``); its caller ``user-1`` unless told otherwise.
api_event = partial(api_events.api_event, user="user-1")


def call(
    handler: Any, method: str, path: str, body: Any = None, *, lambda_timeout_s: int = 30, **kwargs: Any
) -> Answer:
    event = api_event(method, path, body, **kwargs)
    return Answer.of(handler.lambda_handler(event, context(timeout_s=lambda_timeout_s)))


def chat(method: str, path: str, body: Any = None, **kwargs: Any) -> Answer:
    return call(chat_app, method, path, body, **kwargs)


def templates(method: str, path: str, body: Any = None, **kwargs: Any) -> Answer:
    return call(templates_app, method, path, body, **kwargs)


def start_session(user: str = "user-1", **context_fields: str) -> str:
    answer = chat("POST", "/ai-agent/sessions", {"context": context_fields or {"processType": "中途採用"}}, user=user)
    assert answer.status == 201, answer.body
    return str(answer.body["sessionId"])


def send(session_id: str, message: str, **kwargs: Any) -> Answer:
    return chat("POST", f"/ai-agent/sessions/{session_id}/messages", {"message": message}, **kwargs)


def items(client: Any, table: str, prefix: str | None = None) -> list[dict[str, Any]]:
    deserializer = TypeDeserializer()
    found = []
    for item in client.scan(TableName=table)["Items"]:
        value = {key: deserializer.deserialize(raw) for key, raw in item.items()}
        if prefix is None or str(value["sk"]).startswith(prefix) or str(value["pk"]).startswith(prefix):
            found.append(value)
    return sorted(found, key=lambda v: (str(v["pk"]), str(v["sk"])))
