"""The connections table on moto (built from template.yaml): a connection a push finds gone is
deleted, unless its ``$connect`` may still be running (API Gateway answers 410 to a post for a
connection whose handshake has not finished)."""

from __future__ import annotations

from typing import Any

import pytest
from lambda_agents.storage.connections import HANDSHAKE_GRACE_S, DynamoConnections

pytestmark = pytest.mark.integration
TABLES = ["ConnectionsTable"]

NOW = 1_800_000_000


def test_a_gone_connection_is_deleted_once_its_handshake_is_surely_over_and_kept_while_it_may_run(aws: Any) -> None:
    connections = DynamoConnections("ConnectionsTable", clock=lambda: NOW)
    connections.add("old", "alice", NOW - HANDSHAKE_GRACE_S, NOW + 7200)
    connections.add("new", "alice", NOW - HANDSHAKE_GRACE_S + 1, NOW + 7200)

    assert connections.remove_gone("old") is True
    assert connections.remove_gone("new") is False
    assert connections.connections_of("alice") == ["new"]
    assert connections.remove_gone("never-listed") is True  # nothing to keep: deleting nothing is done
