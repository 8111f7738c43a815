"""One chat answer timed where its user sees it: ``make serve``'s page (/_local/live) in headless
Chromium, its message sent by a click on the page's Send, its words timed when the page paints them.

In the page: the click's time (a capturing listener on Send), each socket frame's arrival (the page's
``onmessage`` wrapped), and, for the new answer's node, the first frame after its first words and after
its ``done`` (a MutationObserver, then the next ``requestAnimationFrame``: the frame that paints them),
all by ``performance.now()``. The page's clock is put on the process's with ``performance.timeOrigin``,
so the fake server's first token is on the same clock as the click. The words on screen when ``done``
arrives (before the page replaces them with the stored text) are compared with the stored answer.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import replace
from typing import Any

from benchmarks.real_speed.user import Deliveries, _request
from benchmarks.socket_speed.user import GIVE_UP_S, POLL_S, WARM_UP, outcome

WAIT_MS = GIVE_UP_S * 1000
TIMED = """() => {
  const marks = window.benchMarks = {before: $("answers").lastElementChild.dataset.seq};
  const shown = socket.onmessage;
  socket.onmessage = (event) => {
    const frame = JSON.parse(event.data), at = performance.now();
    if (frame.type === "delta" && marks.frame === undefined) marks.frame = at;
    if (frame.type === "done") {
      marks.doneFrame = at;
      marks.shownAtDone = $("answers").lastElementChild.textContent;
    }
    shown(event);
  };
  $("send").addEventListener("click", () => { marks.click = performance.now(); }, true);
  const painted = (key) => {
    if (marks[key] !== undefined) return;
    marks[key] = null;
    requestAnimationFrame(() => { marks[key] = performance.now(); });
  };
  new MutationObserver(() => {
    const node = $("answers").lastElementChild;
    if (marks.click === undefined || node.dataset.seq === marks.before) return;
    if (node.textContent.length > 0) painted("words");
    if (node.classList.contains("done")) painted("done");
  }).observe($("answers"), {subtree: true, childList: true, characterData: true, attributes: true});
}"""


def measured_in_browser(runner: Any, fake: Any, reply: Any, user: str, out: Any) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    from devtools.chromium import find_chromium, launch
    from devtools.runner import serving

    with serving(runner) as url, Deliveries(runner, POLL_S), sync_playwright() as playwright:
        browser = launch(playwright, find_chromium() or "chromium")
        page = browser.new_page()
        page.goto(f"{url}/_local/live")
        page.fill("#user", user)
        page.click("#open")
        page.wait_for_selector("#status:text('open')", timeout=WAIT_MS)
        fake.enqueue(replace(reply, content=WARM_UP, first_token_s=None))  # at the profile's pace
        page.click("#send")
        page.wait_for_selector(".answer.done", timeout=WAIT_MS)
        page.evaluate(TIMED)
        fake.enqueue(*[reply for _ in range(3)])  # the answer, and the worker's after a cut
        out.write("ready\n")
        out.flush()
        sys.stdin.readline()  # go
        before = time.monotonic()
        page.click("#send")
        page.wait_for_function("() => typeof benchMarks.done === 'number'", timeout=WAIT_MS)
        marks = page.evaluate("({...benchMarks, origin: performance.timeOrigin})")
        session = page.inner_text("#session")
        seq = page.locator(".answer").last.get_attribute("data-seq")
        final = page.locator(".answer").last.text_content()
        browser.close()
    time.sleep(0.2)  # the ledger's last records
    clicked = (marks["origin"] + marks["click"]) / 1000 - (time.time() - time.monotonic())
    billed = sorted((r for r in fake.billing if r.started_at >= before), key=lambda record: record.started_at)
    result = outcome(runner, user, session, "browser", clicked, 0, math.nan, None, billed)
    _, stored, _ = _request(runner, "GET", f"/ai-agent/sessions/{session}/messages/{seq}", user=user)
    content = ((stored or {}).get("aiResponse") or {}).get("content")

    def after_click(key: str) -> float:
        return float(marks[key] - marks["click"]) / 1000

    result.update(
        handed_over=True,  # sendMessage: always the worker
        first_frame_s=after_click("frame"),
        first_words_s=after_click("words"),
        done_frame_s=after_click("doneFrame"),
        whole_s=after_click("done"),
        equal=content is not None and marks["shownAtDone"] == content == final,
    )
    return result
