"""Proof that nothing is left: every table of the template, scanned item by item, for a string.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .template import create_tables


def every_table(client: Any) -> list[str]:
    """Create the template's tables that are missing; return every table's name."""
    create_tables(client)
    return sorted(client.list_tables()["TableNames"])


def items_mentioning(client: Any, needle: str) -> dict[str, list[dict[str, Any]]]:
    """Per table, the raw items whose serialised form contains ``needle`` (tables without any are omitted)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for name in every_table(client):
        kwargs: dict[str, Any] = {"TableName": name}
        while True:
            page = client.scan(**kwargs)
            hits = [item for item in page.get("Items", []) if any(needle in text for text in _texts(item))]
            if hits:
                found.setdefault(name, []).extend(hits)
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return found


def item_count(client: Any, table: str) -> int:
    return int(client.scan(TableName=table, Select="COUNT")["Count"])


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, str):
        yield value
        if value[:1] in ("{", "["):
            yield from _texts(_decoded(value))
    else:
        yield str(value)


def _decoded(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
