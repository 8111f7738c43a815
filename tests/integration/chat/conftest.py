"""ChatFunction end to end on moto tables built from template.yaml (see chat_api.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .chat_api import chat_tables


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with chat_tables(monkeypatch) as client:
        yield client
