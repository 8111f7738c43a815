"""A command run the way the tests run one: its output captured as text, bounded in time, and its
exit code left for the test to judge (``check=False``), so a failure shows what the command said."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from devtools.template import ROOT

# A `curl` put first on a documented block's PATH: it records each status in $CURL_STATUSES and
# hands the body on, as the document's `curl -s` prints it (the real one is $REAL_CURL).
CURL_WRAPPER = """#!/bin/sh
body=$(mktemp)
code=$("$REAL_CURL" "$@" -o "$body" -w '%{http_code}')
rc=$?
echo "${code:-000}" >> "$CURL_STATUSES"
cat "$body"
rm -f "$body"
exit $rc
"""


def run_command(
    command: Sequence[str], *, cwd: Path = ROOT, env: Mapping[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``command`` in ``cwd`` with ``env`` (None: this process's environment), killed after ``timeout`` seconds."""
    return subprocess.run(list(command), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
