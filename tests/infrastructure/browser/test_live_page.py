"""`make serve`'s page at /_local/live (the runner's own, never deployed): a local user opens a chat
session and an interview, sends a message over the WebSocket API and watches its answer arrive.

A real browser (Debian's Chromium, driven by Playwright from PyPI at that executable: no browser is
downloaded) runs the page against the local runner, the workers delivering as Lambda's pollers do.
What the page shows is held to what is stored: ``accepted`` comes, then the ``done`` text is the
answer its REST read returns.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devtools.runner import QueuePoller
from tests.support.chromium import live_page
from tests.support.socket_clients import rest, served_runner

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with served_runner() as (runner, url):
        poller = QueuePoller(runner, 0.2)  # the workers, as `make serve` runs them
        poller.start()
        try:
            yield url
        finally:
            poller.stop()


@pytest.fixture
def page(base_url: str) -> Iterator[object]:
    with live_page(base_url) as opened:
        yield opened


@pytest.mark.parametrize("to", ["chat", "interview"])
def test_a_message_sent_from_the_page_is_accepted_and_its_answer_shown_as_stored(
    page: object, base_url: str, to: str
) -> None:
    page.fill("#user", f"page-{to}")  # type: ignore[attr-defined]
    page.check(f"input[name=to][value={to}]")  # type: ignore[attr-defined]
    page.click("#open")  # type: ignore[attr-defined]
    page.wait_for_selector("#status:text('open')", timeout=60_000)  # type: ignore[attr-defined]
    session = page.inner_text("#session")  # type: ignore[attr-defined]
    if to == "interview":
        page.fill("#message", "こんにちは")  # type: ignore[attr-defined]
    page.click("#send")  # type: ignore[attr-defined]
    shown = page.wait_for_selector(".answer.done", timeout=120_000)  # type: ignore[attr-defined]
    assert shown.get_attribute("data-accepted") == "true"
    seq = shown.get_attribute("data-seq")
    if to == "chat":
        status, stored = rest(base_url, "GET", f"/ai-agent/sessions/{session}/messages/{seq}", f"page-{to}")
        text = stored["aiResponse"]["content"]
    else:
        status, stored = rest(base_url, "GET", f"/interviews/{session}/turns/{seq}", f"page-{to}")
        text = stored["reply"]
        steps = page.inner_text("#steps")  # type: ignore[attr-defined]
        # the hidden steps were shown as they ran, the greeting's QuickCheck among them
        assert "greeter: thinking started" in steps and "quick_check: checking_question done" in steps
    assert status == 200 and shown.inner_text().strip() == text.strip()
