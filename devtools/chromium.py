"""The Chromium that the browser tests and the browser benchmark drive through Playwright: Debian's
(`make test` installs it: scripts/ensure-chromium.sh), never a browser Playwright downloads."""

from __future__ import annotations

import os
import shutil
from typing import Any

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu"]  # as root in a container; headless paints in software


def find_chromium() -> str | None:
    """Its path, or None when neither ``$CHROMIUM`` nor a ``chromium`` on the PATH is there."""
    return CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")


def launch(playwright: Any, path: str) -> Any:
    """Headless Chromium at ``path``, started by a running ``sync_playwright()``."""
    return playwright.chromium.launch(executable_path=path, args=ARGS)
