"""How late, on this machine, the engine hands back a call the pacing cuts: the real-time side of
the stream cuts whose decisions the tests hold to a hand-moved clock (tests/unit/llm/test_pacing.py)
and to margins no busy machine reaches (tests/integration/llm/test_streaming_openai.py and
test_engine_openai.py), so that the tests do not depend on how fast the machine is.

Through the real openai client against the fake server (time_scale 0.01), each cut ``RUNS`` times:

- **deadline, still arriving**: an answer written slowly, the caller's deadline 1 s away; the
  watchdog cuts the stream at the attempt's own deadline, the caller's less ``DEADLINE_SLACK_S``
  (0.25 s), which is there for the engine to hand back before the caller's;
- **deadline, not started**: a server silent before its headers, the same deadline; the read's
  timeout ends the call there;
- **stall**: a pause after the first tokens that never ends, a 0.5 s stall limit;
- **first token**: a first token that never comes, a 0.5 s first-token limit.

For each: how long after the cut was due the call was handed back (p50, p95, worst, ms), and for
the deadline cuts how many were handed back before the caller's deadline. Against, in the same
run, the floor: how late this machine wakes a thread from a timed wait of the same length (a cut
can be no earlier than its watchdog's wake-up).

Then what a cut when the pace shows the answer late saves: an answer written at a tenth of its
planned pace with 4 s to go, cut when its pace shows it (``Pacing.cut_when_late``) against cut at
the deadline; the completion tokens the fake server billed each, and their ratio.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import threading
import time
from dataclasses import dataclass

from lambda_agents.llm import ChatRequest, Deadline, DeadlineReached, Pacing, RetryPolicy, complete_with_retries
from lambda_agents.llm.errors import ProviderTimeout
from lambda_agents.llm.openai_model import OpenAIChatModel, OpenAIModelSettings
from lambda_agents.llm.policy import DEADLINE_SLACK_S, TRANSIENT_KINDS, StreamTimeouts
from lambda_agents.llm.speeds import ModelSpeeds, SpeedEstimate
from lambda_agents.llm.types import estimate_tokens

from benchmarks.command_line import benchmark_arguments
from devtools.fake_openai import FakeOpenAIServer, Reply, Slow

SCALE = 0.01  # the fake server 100x faster than the model it plays
RUNS = 20
PACE_RUNS = 5
DEADLINE_S = 1.0
LIMIT_S = 0.5
PACE_DEADLINE_S = 4.0
NEVER = 86_400.0  # a day of the model's time: only the client's leaving ends it
MESSAGES = [{"role": "user", "content": "Write about breathing"}]
ANSWER = "Breathe in slowly through your nose, hold it, and let it go. " * 60
ONCE = RetryPolicy(max_attempts=1, retry_on=TRANSIENT_KINDS)
# The prior the plans are made with: 100 tokens/s of the model's time (10,000 here), so every plan fits.
PRIOR = SpeedEstimate(first_token_s=0.5 * SCALE, tokens_per_s=100.0 / SCALE)


@dataclass(frozen=True)
class Cut:
    name: str
    due: str
    late_s: list[float]
    before_deadline: int | None = None  # of RUNS; None: no caller's deadline in this case


def model(server: FakeOpenAIServer, *, first_token_s: float = 10.0, stall_s: float = 10.0) -> OpenAIChatModel:
    timeouts = StreamTimeouts(first_token_s=first_token_s, stall_s=stall_s)
    return OpenAIChatModel(
        OpenAIModelSettings(api_key="k", model="gpt-4o", base_url=server.base_url, timeouts=timeouts, speed_prior=PRIOR)
    )


def request(*, cut_when_late: bool = False) -> ChatRequest:
    return ChatRequest(
        messages=MESSAGES, max_tokens=1200, purpose="bench.cut", pacing=Pacing(cut_when_late=cut_when_late)
    )


def deadline_cut(server: FakeOpenAIServer, step: Reply | Slow) -> tuple[float, bool]:
    """One call cut by its deadline: seconds from the attempt's deadline to the hand-back, and
    whether that was before the caller's deadline."""
    server.enqueue(step)
    deadline = Deadline.after(DEADLINE_S)
    try:
        complete_with_retries(model(server), request(), retry_policy=ONCE, deadline=deadline, speeds=ModelSpeeds())
    except DeadlineReached:
        back = time.monotonic()
    else:
        raise AssertionError("the deadline did not cut the call")
    return back - (deadline.expires_at - DEADLINE_SLACK_S), back < deadline.expires_at


def timeout_cut(server: FakeOpenAIServer, step: Reply, *, stall: bool) -> float:
    """One call cut by a 0.5 s limit (the stall's, or the first token's): seconds from when the cut
    was due (the watch's start, or its last chunk, plus the limit) to the hand-back."""
    server.enqueue(step)
    timed = model(server, first_token_s=10.0 if stall else LIMIT_S, stall_s=LIMIT_S if stall else 10.0)
    started = time.monotonic()
    try:
        timed.complete(request())
    except ProviderTimeout as cut:
        back = time.monotonic()
        timing = cut.partial.timing if cut.partial is not None else None
        last_chunk_s = timing.total_s if stall and timing is not None else 0.0
    else:
        raise AssertionError("the limit did not cut the call")
    return back - (started + last_chunk_s + LIMIT_S)


def floor() -> float:
    """How late a thread wakes from a timed wait of ``LIMIT_S``."""
    started = time.monotonic()
    threading.Event().wait(LIMIT_S)
    return time.monotonic() - started - LIMIT_S


def cuts(server: FakeOpenAIServer) -> list[Cut]:
    arriving: list[tuple[float, bool]] = []
    silent: list[tuple[float, bool]] = []
    stalls: list[float] = []
    first_tokens: list[float] = []
    floors: list[float] = []
    for _ in range(RUNS):  # in turns, so that a busy moment slows every case alike
        arriving.append(deadline_cut(server, Reply(content=ANSWER, first_token_s=0.5, tokens_per_s=2.0)))
        silent.append(deadline_cut(server, Slow(NEVER)))
        stalls.append(timeout_cut(server, Reply(content=ANSWER, stall_after_tokens=20, stall_s=NEVER), stall=True))
        first_tokens.append(timeout_cut(server, Reply(content=ANSWER, first_token_s=NEVER), stall=False))
        floors.append(floor())
    attempt = f"attempt's deadline ({DEADLINE_S:g} s - {DEADLINE_SLACK_S:g} s)"
    return [
        Cut("deadline, still arriving", attempt, [late for late, _ in arriving], sum(ok for _, ok in arriving)),
        Cut("deadline, not started", attempt, [late for late, _ in silent], sum(ok for _, ok in silent)),
        Cut(f"stall ({LIMIT_S:g} s limit)", f"last chunk + {LIMIT_S:g} s", stalls),
        Cut(f"first token ({LIMIT_S:g} s limit)", f"start + {LIMIT_S:g} s", first_tokens),
        Cut(f"floor: a thread's {LIMIT_S:g} s wait", "its end", floors),
    ]


def tokens_billed(server: FakeOpenAIServer, *, cut_when_late: bool) -> int:
    """Completion tokens billed for an answer at a tenth of its planned pace, cut early or at the deadline."""
    server.enqueue(Reply(content=ANSWER, first_token_s=0.5, tokens_per_s=1.0))
    billed_before = len(server.billing)
    with contextlib.suppress(DeadlineReached):  # cut either way: what was billed is the figure
        complete_with_retries(
            model(server),
            request(cut_when_late=cut_when_late),
            retry_policy=ONCE,
            deadline=Deadline.after(PACE_DEADLINE_S),
            speeds=ModelSpeeds(),
        )
    written_by = time.monotonic() + 10.0
    while len(server.billing) <= billed_before and time.monotonic() < written_by:
        time.sleep(0.01)
    return server.billing[-1].completion_tokens


def ms(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def print_cuts(rows: list[Cut]) -> None:
    print(f"each cut {RUNS} times, in turns; late: from when the cut was due to when the call was handed back")
    print(
        f"| {'cut':<30} | {'due':<34} | {'late p50 ms':>11} | {'p95 ms':>7} | {'worst ms':>8} "
        f"| {'back before the caller deadline':>31} |"
    )
    print(f"|{'-' * 32}|{'-' * 36}|{'-' * 12}:|{'-' * 8}:|{'-' * 9}:|{'-' * 32}:|")
    for row in rows:
        before = "" if row.before_deadline is None else f"{row.before_deadline} of {RUNS}"
        print(
            f"| {row.name:<30} | {row.due:<34} | {ms(row.late_s, 0.5):>11.0f} | {ms(row.late_s, 0.95):>7.0f} "
            f"| {max(row.late_s) * 1000:>8.0f} | {before:>31} |"
        )


def print_pace(early: list[int], at_deadline: list[int]) -> None:
    ratios = [cut / whole for cut, whole in zip(early, at_deadline, strict=True) if whole]
    print()
    print(
        f"an answer at a tenth of its planned pace, {PACE_DEADLINE_S:g} s to go, {PACE_RUNS} times: "
        f"completion tokens billed (of {estimate_tokens(ANSWER)})"
    )
    print(f"| {'cut':<32} | {'median':>6} | {'least':>5} | {'most':>5} |")
    print(f"|{'-' * 34}|{'-' * 7}:|{'-' * 6}:|{'-' * 6}:|")
    for name, billed in (("when its pace shows it", early), ("at the deadline", at_deadline)):
        print(f"| {name:<32} | {statistics.median(billed):>6.0f} | {min(billed):>5} | {max(billed):>5} |")
    print(
        f"| {'ratio (pace cut / deadline cut)':<32} | {statistics.median(ratios):>6.2f} | "
        f"{min(ratios):>5.2f} | {max(ratios):>5.2f} |"
    )


def main() -> None:
    load = os.getloadavg()[0]
    with FakeOpenAIServer(time_scale=SCALE) as server:
        model(server).complete(ChatRequest(messages=MESSAGES, max_tokens=1, purpose="bench.warm_up"))
        rows = cuts(server)
        early = [tokens_billed(server, cut_when_late=True) for _ in range(PACE_RUNS)]
        at_deadline = [tokens_billed(server, cut_when_late=False) for _ in range(PACE_RUNS)]
    print(f"load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    print_cuts(rows)
    print_pace(early, at_deadline)


if __name__ == "__main__":
    benchmark_arguments(__file__, __doc__)
    main()
