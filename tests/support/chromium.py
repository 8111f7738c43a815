"""The Chromium the browser tests drive: Debian's (never a downloaded browser)."""

from __future__ import annotations

import os
import shutil

import pytest

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def chromium_path() -> str:
    """Its path; without one the test fails under CI (``make test`` installs it) and is skipped elsewhere."""
    found = CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail(f"no Chromium at {CHROMIUM}: `make test` installs Debian's chromium (scripts/ensure-chromium.sh)")
    pytest.skip(f"no Chromium at {CHROMIUM}: install Debian's chromium (sudo apt-get install chromium)")
