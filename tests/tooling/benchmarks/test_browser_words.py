"""`browser_words_bench`'s page path (benchmarks/socket_speed/browser.py) times what a person sees:
one answer sent by a click on the live page in Chromium, at the fake's instant pace. Its marks come
in the order they happen (the model's first token, the first frame, the words painted; the `done`
frame, then its paint, on the page's clock put on the process's), and the words on screen when
`done` came are the stored answer. Orderings and equalities, never seconds."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from devtools.template import ROOT
from tests.support.chromium import chromium_path

pytestmark = pytest.mark.integration


def test_one_answer_on_the_page_is_timed_in_the_order_it_is_seen_and_ends_as_the_stored_words() -> None:
    chromium_path()  # skipped without Debian's Chromium (failed under CI)
    pytest.importorskip("playwright.sync_api")
    command = [sys.executable, "-m", "benchmarks.socket_speed.user", "browser", "instant", "3"]
    done = subprocess.run(command, cwd=ROOT, input="go\n", capture_output=True, text=True, timeout=300, check=False)

    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["path"] == "browser" and result["calls"] == 1, result
    assert 0 <= result["model_call_s"] <= result["first_token_s"] <= result["first_frame_s"], result
    assert result["first_frame_s"] <= result["first_words_s"] <= result["done_frame_s"] <= result["whole_s"], result
    assert result["equal"] is True, result
