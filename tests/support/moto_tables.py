"""A suite's tables on moto, built from template.yaml itself, for the handlers driven end to end.

Every suite that calls handlers directly does the same four things: its environment set and the
settings that would point elsewhere cleared, the tables created inside ``mock_aws``, and the
handlers' cached ports dropped on the way in and out, so that no port holds a client of another
test's moto."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from moto import mock_aws

from devtools.template import create_tables

# Every suite runs on the offline model, and nothing in the shell may point its handlers at another
# DynamoDB or at a real provider; a suite adds what it sets and clears besides.
OFFLINE = {"AI_AGENT_MODE": "mock"}
POINTING_ELSEWHERE = ("AWS_ENDPOINT_URL_DYNAMODB", "OPENAI_BASE_URL", "OPENAI_API_KEY")


@contextmanager
def tables_on_moto(
    monkeypatch: pytest.MonkeyPatch,
    tables: Iterable[str],
    *,
    environment: Mapping[str, str],
    cleared: Iterable[str],
    reset_ports: Callable[[], None],
    daily_budget: int = 0,
) -> Iterator[Any]:
    """The DynamoDB client of a moto holding ``tables``, with ``OFFLINE`` and ``environment`` set,
    ``POINTING_ELSEWHERE`` and ``cleared`` unset; ``reset_ports`` drops the handlers' cached clients
    before the test and after it; ``daily_budget``: the users' daily tokens, and its table (0: off)."""
    if daily_budget:
        budget = {"USER_DAILY_TOKEN_BUDGET": str(daily_budget), "USER_SPENDING_TABLE": "UserSpendingTable"}
        tables, environment = [*tables, "UserSpendingTable"], {**environment, **budget}
    for name, value in {**OFFLINE, **environment}.items():
        monkeypatch.setenv(name, value)
    for name in (*POINTING_ELSEWHERE, *cleared):
        monkeypatch.delenv(name, raising=False)
    with mock_aws():
        reset_ports()
        client = boto3.client("dynamodb")
        create_tables(client, list(tables))
        yield client
        reset_ports()
