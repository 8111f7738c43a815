"""Interview hand-off (docs/interview.md#turns-answered-later): what the worker's replay of the calls
its request paid for, and the request's planning with the output sizes its worker learned, save.

How it runs, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

import contextlib
import io
import statistics
import time
from dataclasses import dataclass
from typing import Any

from lambda_agents.api.time_budget import ANSWER_MARGIN_S, API_GATEWAY_TIMEOUT_S
from lambda_agents.interview.paid_calls import PaidTurnCalls
from lambda_agents.llm.prices import cost_usd
from lambda_agents.llm.types import Usage

from benchmarks.command_line import benchmark_arguments
from benchmarks.interview_handoff import InterviewFunctions, interview_functions
from benchmarks.interview_live import settled_ledger
from devtools.fake_openai import INSTANT, FakeOpenAIServer, Reply, SpeedProfile
from devtools.fake_openai.interview_replies import (
    GREETING,
    asked,
    audited,
    reviewed,
    settings_and_plan,
    tool,
    verdict,
)
from devtools.time_scale import model_environment

FIELDS = [
    {
        "field_id": "experience",
        "label": "バリスタ経験",
        "intent": "How long and where",
        "required": True,
        "required_facts": ["経験年数", "勤務先"],
        "done_criteria": "years and a workplace",
    },
    {
        "field_id": "motivation",
        "label": "志望動機",
        "intent": "Why this job",
        "required": True,
        "required_facts": ["理由"],
        "done_criteria": "a concrete reason",
    },
]
PLAN = [{key: field[key] for key in ("field_id", "label", "intent", "required")} for field in FIELDS]
Q1 = "これまでのバリスタのご経験について、年数と勤務先を教えていただけますか？"
Q2 = "この仕事を志望された理由を、具体的なきっかけも含めて教えていただけますか？"
EXPERIENCE = [{"name": "経験年数", "value": "5年"}, {"name": "勤務先", "value": "東京のカフェ森"}]
REASON = [{"name": "理由", "value": "自家焙煎のコーヒーと接客が好き"}]
SUMMARY = "バリスタ経験5年（東京のカフェ森）。志望動機は自家焙煎のコーヒーと接客。"
USER = "bench-applicant-{n}"
GPT_4O = "gpt-4o"
# A first token that never comes: only the request's deadline ends the wait.
NEVER_S = 86_400.0


# -- 1. paid calls replayed or made again ---------------------------------------------------------

# The request's Lambda time in the cut turn: the deadline (3 s less) cuts the late call, after the
# settings and the plan came back at once.
CUT_REQUEST_S = 6.0
CUT_SCRIPT = [*settings_and_plan(PLAN), Reply(content="遅い回答", first_token_s=NEVER_S)]
WHOLE_TURN = [*settings_and_plan(PLAN), *asked(Q1)]
COMPLETED_IN_THE_REQUEST = len(settings_and_plan(PLAN))


class NoCallRecords:
    """The baseline's ``TurnCallRecords``: nothing kept, nothing found (the worker pays again)."""

    def write(self, record: PaidTurnCalls) -> None:
        return None

    def read(self, session_id: str, turn_id: str) -> PaidTurnCalls | None:
        return None


@dataclass(frozen=True)
class ReplayFigures:
    label: str
    turns: int
    request_calls: float
    worker_calls: float
    billed_tokens: float
    cost_usd: float
    usage_matches: int  # interviews whose usageTotal is the provider's bill plus the cut calls' safe side


def _usage(ledger: list[Any]) -> Usage:
    return Usage(
        sum(r.prompt_tokens for r in ledger),
        sum(r.completion_tokens for r in ledger),
        cached_prompt_tokens=sum(r.cached_tokens for r in ledger),
    )


def _safe_side(fake: FakeOpenAIServer, ledger: list[Any]) -> int:
    """What the product counts for a call cut before its answer: its whole max_tokens (docs/cost.md)."""
    cut = [fake.requests[record.request] for record in ledger if record.ended != "complete"]
    return sum(int(body.get("max_completion_tokens") or body["max_tokens"]) for body in cut)


def _one_cut_turn(functions: InterviewFunctions, fake: FakeOpenAIServer, n: int, replay: bool) -> dict[str, int]:
    user = USER.format(n=n)
    first = len(settled_ledger(fake))
    session = functions.start(user)
    fake.enqueue(*asked(GREETING))
    assert functions.send(session, "こんにちは、応募したいです。", user, 29.0).status == 200
    turn_starts = len(settled_ledger(fake))
    fake.enqueue(*CUT_SCRIPT)
    accepted = functions.send(session, "日本語でお願いします。東京に住んでいます。", user, CUT_REQUEST_S)
    in_the_request = len(settled_ledger(fake)) - turn_starts
    if accepted.status != 202 or in_the_request != len(CUT_SCRIPT):
        raise RuntimeError(f"the turn was not cut where scripted: {accepted.status}, {in_the_request} calls")
    fake.enqueue(*(WHOLE_TURN[COMPLETED_IN_THE_REQUEST:] if replay else WHOLE_TURN))
    answer = functions.answered(accepted, user)
    if answer.status != 200 or answer.body["reply"] != Q1:
        raise RuntimeError(f"the worker did not answer the turn: {answer.status} {answer.body}")
    fake.assert_script_consumed()
    ledger = settled_ledger(fake)
    turn = ledger[turn_starts:]
    usage = _usage(turn)
    interview = ledger[first:]
    billed = _usage(interview).total_tokens + _safe_side(fake, interview)
    return {
        "request": in_the_request,
        "worker": len(turn) - in_the_request,
        "tokens": usage.total_tokens,
        "cost_nano": round((cost_usd(GPT_4O, usage) or 0.0) * 1e9),
        "matches": int(functions.usage_total(session) == billed),
    }


def paid_calls_side(turns: int, *, replay: bool) -> ReplayFigures:
    """``turns`` interviews' second turn (settings, plan, first question), each cut by the request's
    deadline after the settings and the plan and answered by the worker; ``replay``: today's
    product, else the record disabled."""
    environment = {**model_environment("", 1.0), "OPENAI_FIRST_TOKEN_TIMEOUT_SECONDS": "30"}
    environment |= {"OPENAI_FIRST_TOKEN_SECONDS": "0.05", "OPENAI_TOKENS_PER_SECOND": "10000"}
    with FakeOpenAIServer(profile=INSTANT) as fake:
        environment["OPENAI_BASE_URL"] = fake.base_url
        with interview_functions(environment, FIELDS) as functions:
            rows = []
            for n in range(turns):
                if not replay:
                    for service in (
                        functions.request_app.dependencies().service,
                        functions.worker_app.dependencies().turns,
                    ):
                        service.paid_calls = NoCallRecords()
                rows.append(_one_cut_turn(functions, fake, n, replay))

    def mean(key: str) -> float:
        return statistics.fmean(row[key] for row in rows)

    return ReplayFigures(
        label="replayed (the product)" if replay else "made again (record disabled)",
        turns=turns,
        request_calls=mean("request"),
        worker_calls=mean("worker"),
        billed_tokens=mean("tokens"),
        cost_usd=mean("cost_nano") / 1e9,
        usage_matches=sum(row["matches"] for row in rows),
    )


def print_paid_calls(rows: list[ReplayFigures]) -> None:
    replayed, again = rows
    print(
        f"1. Paid calls: an interview's second turn (the settings, the plan, the first question: "
        f"{len(WHOLE_TURN)} calls) cut by the request's deadline after {COMPLETED_IN_THE_REQUEST} calls, "
        f"answered by the worker; {replayed.turns} turn(s) a side (means per turn; the fake bills, gpt-4o list price)"
    )
    print()
    print(
        "| worker | calls in the request | calls in the worker | calls per turn | tokens billed | cost per turn (USD) "
        "| cost per 1,000 turns (USD) | usageTotal = billed + cut calls' max_tokens |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for row in rows:
        print(
            f"| {row.label} | {row.request_calls:.0f} | {row.worker_calls:.0f} | "
            f"{row.request_calls + row.worker_calls:.0f} | {row.billed_tokens:,.0f} | {row.cost_usd:.6f} | "
            f"{row.cost_usd * 1000:.2f} | {row.usage_matches} of {row.turns} |"
        )
    saved = 1 - replayed.cost_usd / again.cost_usd
    print()
    print(
        f"Replayed: {again.worker_calls - replayed.worker_calls:.0f} calls and "
        f"{again.billed_tokens - replayed.billed_tokens:,.0f} tokens fewer per handed-over turn "
        f"({saved:.0%} of its cost)."
    )


# -- 2. shared output sizes on or off --------------------------------------------------------------

# The provider at its usual pace (gpt-4o's 60 tokens/s, the first token after 1 s), then slow to
# start (the first token after 3.5 s), run SCALE times real time: every real millisecond the
# functions spend (moto, the client) counts 1/SCALE times in the model's time.
SCALE = 0.2
USUAL = SpeedProfile("usual", (1.0, 1.0), (60.0, 60.0, 60.0))
SLOW_START = SpeedProfile("slow-start", (3.5, 3.5), (60.0, 60.0, 60.0))
# The request's Lambda time: its deadline is API Gateway's 29 s less the 3 s kept to answer, in
# model seconds; the margin is the handler's own, in real ones.
REQUEST_S = (API_GATEWAY_TIMEOUT_S - ANSWER_MARGIN_S) * SCALE + ANSWER_MARGIN_S
LAST_ANSWER = "自家焙煎のコーヒーが好きで、お客様と話すのが楽しいからです。"
# The Reviewer says why it passes: an answer long enough to teach the request the model's pace.
FEEDBACK = (
    "理由は具体的です。自家焙煎のコーヒーへの関心と接客の楽しさが、これまでの5年間の経験と結びついて"
    "説明されており、志望動機として十分です。追加で確認すべき事実はありません。"
)
LAST_TURN = [
    tool("subtask", agent="reviewer", facts=REASON),
    verdict(passed=True, feedback=FEEDBACK, missing_facts=None),
    *audited(SUMMARY),
]


@dataclass(frozen=True)
class SizesFigures:
    label: str
    turns: int
    handed_over: int
    answer_s: list[float]  # the request's send to the turn's answer, in model seconds
    auditor_max_tokens: list[int]  # what the turn's Auditor call was planned at, per call made
    retry_after_s: list[int]  # what each 202 told the client to wait before reading the answer


def _containers_forget(functions: InterviewFunctions) -> None:
    """New containers of both functions: what this process's containers learned (output sizes,
    pace, turn times) forgotten; what the worker shared in InterviewsTable stays."""
    from lambda_agents.interview.pending_turns import CONTAINER_TURN_TIMES
    from lambda_agents.llm.budgets import CONTAINER_BUDGETS
    from lambda_agents.llm.speeds import CONTAINER_SPEEDS

    for memory in (CONTAINER_BUDGETS, CONTAINER_SPEEDS, CONTAINER_TURN_TIMES):
        memory.clear()
    functions.new_containers()


def _up_to_the_last_answer(functions: InterviewFunctions, fake: FakeOpenAIServer, user: str) -> str:
    """An interview whose last field's question is open (its turns answered at once)."""
    fake.set_profile(INSTANT, 1.0)
    session = functions.start(user)
    for script, text in (
        (asked(GREETING), "こんにちは、応募したいです。"),
        ([*settings_and_plan(PLAN), *asked(Q1)], "日本語でお願いします。東京に住んでいます。"),
        ([*reviewed(EXPERIENCE), *asked(Q2)], "東京のカフェ森で5年間バリスタをしていました。"),
    ):
        fake.enqueue(*script)
        answer = functions.answered(functions.send(session, text, user, REQUEST_S), user)
        assert answer.status == 200, answer.body
    fake.assert_script_consumed()
    return session


def _auditor_budgets(fake: FakeOpenAIServer, since: int) -> list[int]:
    bodies = fake.requests[since:]
    audits = [
        b for b in bodies if "AuditResult" in str((b.get("response_format") or {}).get("json_schema", {}).get("name"))
    ]
    return [int(b.get("max_completion_tokens") or b["max_tokens"]) for b in audits]


def _one_last_answer(n: int, shared: bool) -> tuple[int | None, float, list[int]]:
    """One deployment: the worker, in a container of its own, sees an Auditor write at the usual
    pace; then the applicant's last answer comes to a fresh request container while the provider
    is slow to start. The interviews' earlier turns are answered at once, and forgotten."""
    with FakeOpenAIServer(profile=INSTANT) as fake:
        environment = {**model_environment(fake.base_url, SCALE, waits_scaled=True)}
        with interview_functions(environment, FIELDS) as functions:
            seen, user = USER.format(n=f"{n}-seen"), USER.format(n=n)
            seen_session = _up_to_the_last_answer(functions, fake, seen)
            session = _up_to_the_last_answer(functions, fake, user)
            _containers_forget(functions)
            fake.set_profile(USUAL, SCALE)
            fake.enqueue(*LAST_TURN)
            functions.deliver_later(seen_session, LAST_ANSWER, seen)
            _containers_forget(functions)
            if not shared:
                functions.without_shared_sizes()
            fake.set_profile(SLOW_START, SCALE)
            since = len(fake.requests)
            fake.enqueue(*LAST_TURN)
            started = time.monotonic()
            sent = functions.send(session, LAST_ANSWER, user, REQUEST_S)
            planned = _auditor_budgets(fake, since)
            if sent.status == 202:  # the worker replays the whole answers; the rest are the model's again
                whole = sum(1 for r in settled_ledger(fake) if r.request >= since and r.ended == "complete")
                fake.reset()
                fake.enqueue(*LAST_TURN[whole:])
            answer = functions.answered(sent, user)
            waited = (time.monotonic() - started) / SCALE
            if answer.status != 200 or answer.body["replyKind"] != "completed":
                raise RuntimeError(f"the last answer was not audited: {answer.status} {answer.body}")
            fake.assert_script_consumed()
            handed_over = sent.status == 202
            retry_after = int(sent.body["retryAfterSeconds"]) if handed_over else None
            return retry_after, waited, planned + (_auditor_budgets(fake, 0) if handed_over else [])


def sizes_side(turns: int, *, shared: bool) -> SizesFigures:
    """``turns`` last answers, each in a deployment of its own (``_one_last_answer``); ``shared``:
    the product, else the request without the worker's output sizes."""
    retries: list[int] = []
    waits: list[float] = []
    budgets: list[int] = []
    for n in range(turns):
        retry_after, waited, planned = _one_last_answer(n, shared)
        retries += [] if retry_after is None else [retry_after]
        waits.append(waited)
        budgets += planned
    label = "shared (the product)" if shared else "not shared (the request's own sizes)"
    return SizesFigures(label, turns, len(retries), waits, budgets, retries)


def print_sizes(rows: list[SizesFigures]) -> None:
    print(
        "\n2. Shared output sizes: an interview's last answer (the Interviewer, the Reviewer, the Interviewer, "
        "the Auditor) sent to a fresh request container (deadline 26 s) while the provider is slow to start "
        "(first token 3.5 s, then 60 tokens/s), after the worker saw the Auditor write at the usual pace (first "
        f"token 1 s); each turn a deployment of its own, the fake and the product's deadline at {SCALE:g}x "
        f"real time; {rows[0].turns} turn(s) a side; times in model seconds"
    )
    print()
    print(
        "| request container | handed over | Auditor's max_tokens | send -> answer stored, median | max "
        "| 202's Retry-After (the client's first read) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        planned = ", ".join(str(t) for t in sorted(set(row.auditor_max_tokens))) or "-"
        retry = ", ".join(f"{t} s" for t in sorted(set(row.retry_after_s))) or "-"
        print(
            f"| {row.label} | {row.handed_over} of {row.turns} | {planned} | "
            f"{statistics.median(row.answer_s):.1f} s | {max(row.answer_s):.1f} s | {retry} |"
        )
    print()
    print(
        "A turn handed over is run by the worker at once here (Lambda's poller takes the message as it is "
        "sent); its applicant reads the answer at the 202's Retry-After, or later."
    )


@dataclass(frozen=True)
class HandoffFigures:
    replays: list[ReplayFigures]  # replayed, then made again
    sizes: list[SizesFigures]  # shared, then not


def main() -> None:
    run(turns=5, sized_turns=4)


def main_quick() -> HandoffFigures:
    print("Quick mode: 1 turn a side in each table (5 and 4 in the full run).\n")
    return run(turns=1, sized_turns=1)


def run(*, turns: int, sized_turns: int) -> HandoffFigures:
    """Both tables, each side measured in this run; their figures, printed."""
    from lambda_agents.observability import logger

    previous = logger.log_level
    logger.setLevel("ERROR")
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # the functions' metrics lines
            replays = [paid_calls_side(turns, replay=replay) for replay in (True, False)]
            sizes = [sizes_side(sized_turns, shared=shared) for shared in (True, False)]
    finally:
        logger.setLevel(previous)
    print_paid_calls(replays)
    print_sizes(sizes)
    return HandoffFigures(replays, sizes)


if __name__ == "__main__":
    arguments = benchmark_arguments(__file__, __doc__, quick="1 turn a side in each table (5 and 4 in the full run)")
    if arguments.quick:
        main_quick()
    else:
        main()
