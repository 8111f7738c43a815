"""Page cursors: opaque, URL-safe, and refused outside the listing that issued them."""

from __future__ import annotations

import base64
import contextlib
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lambda_agents.paging import CURSOR_PATTERN, InvalidCursor, decode_cursor, encode_cursor


def test_a_cursor_round_trips_within_its_scope_and_matches_the_query_pattern() -> None:
    token = encode_cursor("chat-messages:u1:s1", {"before": 7})
    assert re.fullmatch(CURSOR_PATTERN, token)
    assert decode_cursor(token, "chat-messages:u1:s1") == {"before": 7}


def test_a_cursor_of_another_scope_is_refused() -> None:
    token = encode_cursor("chat-messages:u1:s1", {"before": 7})
    with pytest.raises(InvalidCursor, match="another listing"):
        decode_cursor(token, "chat-messages:u2:s1")


def test_a_cursor_with_its_scope_rewritten_is_refused() -> None:
    forged = base64.urlsafe_b64encode(json.dumps({"v": 1, "s": "0" * 16, "p": {"before": 2}}).encode()).decode()
    with pytest.raises(InvalidCursor):
        decode_cursor(forged.rstrip("="), "chat-messages:u1:s1")


@given(st.text(max_size=600))
def test_any_other_text_is_an_invalid_cursor_never_another_error(token: str) -> None:
    with contextlib.suppress(InvalidCursor):
        decode_cursor(token, "scope")
