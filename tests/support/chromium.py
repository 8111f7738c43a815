"""The Chromium the browser tests drive: Debian's (never a downloaded browser)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from devtools.chromium import CHROMIUM, find_chromium, launch


def chromium_path() -> str:
    """Its path; without one the test fails under CI (``make test`` installs it) and is skipped elsewhere."""
    found = find_chromium()
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail(f"no Chromium at {CHROMIUM}: `make test` installs Debian's chromium (scripts/ensure-chromium.sh)")
    pytest.skip(f"no Chromium at {CHROMIUM}: install Debian's chromium (sudo apt-get install chromium)")


@contextmanager
def live_page(base_url: str) -> Iterator[Any]:
    """The runner's page at ``base_url``/_local/live, open in Chromium driven by Playwright."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright, chromium_path())
        try:
            opened = browser.new_page()
            opened.goto(f"{base_url}/_local/live")
            yield opened
        finally:
            browser.close()
