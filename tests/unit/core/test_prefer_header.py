"""Spec: ``Prefer: respond-async`` (RFC 7240) asks to be answered later: preferences are
comma-separated, parameters follow a semicolon, tokens are case-insensitive."""

from __future__ import annotations

import pytest
from lambda_agents.api.prefer import respond_async


@pytest.mark.parametrize(
    ("header", "wanted"),
    [
        ("respond-async", True),
        ("Respond-Async", True),
        ("wait=10, respond-async", True),
        ("respond-async; foo=bar", True),
        ("return=minimal", False),
        ("respond-asyncx", False),
        ("", False),
        (None, False),
    ],
)
def test_only_the_respond_async_preference_asks_to_be_answered_later(header: str | None, wanted: bool) -> None:
    assert respond_async(header) is wanted
