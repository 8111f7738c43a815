"""Opt-in tests against the real services: `make test-live` runs them (LAMBDA_AGENTS_LIVE=1).

`make test` collects them and skips them, so no key in a developer's shell is ever spent by the
ordinary gate. Each test names the credential it needs in its skip reason.
"""

from __future__ import annotations

import os

import pytest


def require_live(*variables: str) -> dict[str, str]:
    """The named variables' values, or a skip that says what is missing."""
    if os.environ.get("LAMBDA_AGENTS_LIVE") != "1":
        pytest.skip("live test: opt in with `make test-live` (it calls real services and costs money)")
    missing = [name for name in variables if not os.environ.get(name)]
    if missing:
        pytest.skip(f"live test: set {' and '.join(missing)} to run it")
    return {name: os.environ[name] for name in variables}
