"""Time to first words as a person sees them: `make serve`'s page (/_local/live) in headless Chromium,
a chat message sent by a click on the page, timed to the first words the page paints and to the
painted `done`, next to the same answers read by a WebSocket client and by REST without a socket.

Each answer in a process of its own (``benchmarks/socket_speed``: ``user.py``, the page in
``browser.py``): the local runner with the WebSocket API and its page, the real openai client, the
fake server streaming ~1,000 tokens at the model's pace in real seconds (60 tokens/s, 20 tokens/s, a
reasoning model's first token after 25 s), after a short warm-up answer by the same path. A path's
answers start together once every process is set up, one path after another. In the page, by ``performance.now()``:
the click on Send, the socket frames' arrival, and the animation frame after the words (then `done`)
reach the page's DOM (a MutationObserver, then ``requestAnimationFrame``). The words on screen when
`done` arrives are compared with the stored answer.

How it works, and why: benchmarks/README.md (section ``browser_words_bench``).
"""

from __future__ import annotations

import sys
from typing import Any

from benchmarks.command_line import benchmark_arguments
from benchmarks.socket_bench import PROFILES, Row, answers_table, pair, percentile, rows_of

PATHS = {"baseline": "REST, no socket (baseline)", "socket": "WebSocket client", "browser": "the page in Chromium"}
ANSWERS = {"gpt-4o": 5, "slow-hour": 5, "reasoning": 5}
QUICK = ("gpt-4o", 1)


def ms(values: list[float]) -> str:
    return "-" if not values else f"{percentile(values, 0.5) * 1000:.0f} ms / {percentile(values, 0.95) * 1000:.0f} ms"


def cells(row: Row, ok: list[dict[str, Any]]) -> list[str]:
    page, socket = row.path == "browser", row.path != "baseline"
    return [
        pair(row.values("model_call_s")),
        pair(row.values("first_words_s" if socket else "whole_s")),
        pair(row.between("first_words_s", "first_token_s")) if socket else "-",
        ms(row.between("first_words_s", "first_frame_s")) if page else "-",
        pair(row.values("whole_s")),
        ms(row.between("whole_s", "done_frame_s")) if page else "-",
        f"{sum(1 for o in ok if o.get('equal'))}/{len(ok)}" if socket else "-",
    ]


COLUMNS = (
    "send -> model's call p50 / p95 | send -> first words p50 / p95 | model's first token -> first words p50 / p95 "
    "| first frame -> words painted p50 / p95 | send -> whole answer p50 / p95 | done frame -> painted p50 / p95 "
    "| words at done = stored"
)


def main(quick: bool = False) -> None:
    plan = {QUICK[0]: QUICK[1]} if quick else ANSWERS
    rows = [row for profile, answers in plan.items() for row in rows_of(profile, tuple(PATHS), answers, together=quick)]
    if quick:
        print(
            f"Quick mode: {PROFILES[QUICK[0]]} only, {QUICK[1]} answer a path; the full run: every model, 5 a path.\n"
        )
    print(answers_table(rows, PATHS, COLUMNS, cells))
    print("\nsend: the click on the page's Send (the page's clock, put on the process's by performance.timeOrigin),")
    print("the client's send, or the REST request. first words: the animation frame after the first words reach")
    print("the page's DOM; the WebSocket client's first delta; the baseline's whole answer. whole answer:")
    print("the frame after the page shows `done`; `done` on the client's socket; the REST answer (a 202 polled")
    print("at its Retry-After). words at done = stored: the words on screen (the deltas the client joined) when")
    print("`done` came, against the stored answer. A path's answers ran together, one path after another.")
    sys.stdout.flush()


def main_quick() -> None:
    main(quick=True)


if __name__ == "__main__":
    arguments = benchmark_arguments(__file__, __doc__, quick="60 tokens/s only, 1 answer a path")
    main(quick=arguments.quick)
