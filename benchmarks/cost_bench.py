"""What one active user costs a day in model tokens, measured through the product
(what the figures mean and leave out: docs/cost.md).

How it runs, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from unittest import mock

from lambda_agents.llm.prices import Billing, cost_usd
from lambda_agents.llm.types import Usage

from benchmarks.command_line import benchmark_arguments
from devtools.fake_openai import DEFAULT_RETENTION_S, FakeOpenAIServer, ManualClock, Reply
from devtools.fake_openai.interview_replies import GREETING, asked, audited, reviewed, settings_and_plan
from devtools.fake_openai.server import BillingRecord

GAP_S = 60.0  # between two chat messages, or two interview turns, of one sitting (provider seconds)
DAY_PART_S = 3 * 3600.0  # between the day's activities: the plan at 05:00, chat and interview later
NEIGHBOUR_LEAD_S = 60.0  # "busy": the other user did the same this long before
SETTLE_S = 10.0  # at most this long for the ledger's last records after an answer
GIVE_UP_S = 120.0  # one activity of one user, at most (the fake answers at once)
PRICED_MODELS = ("gpt-4o", "gpt-4o-mini")
HAND_COMPUTED = {"light": (0.034, 0.017), "typical": (0.12, 0.10), "heavy": (0.86, 0.84)}
PROBLEMS = ["staying_up_late", "procrastination", "anxiety"]  # 15 slots
CHAT_MESSAGES = [
    "中途採用の段取りを作りたいです。",
    "求人票には何を書けばいいですか？",
    "面接は何回くらいが普通でしょうか。",
    "内定通知から入社までの期間の目安を教えてください。",
    "書類選考の基準はどう決めればいいですか？",
]


@dataclass(frozen=True)
class Mix:
    """One user's day: the day's nudge plan, app reads, chat messages (one conversation), interview turns."""

    name: str
    plan: bool = True
    app_reads: int = 2
    chat_messages: int = 0
    interview_turns: int = 0


MIXES = [
    Mix("light"),
    Mix("typical", chat_messages=5),
    Mix("heavy", chat_messages=20, interview_turns=15),
]


@dataclass
class Measured:
    """One user's day as the fake billed it: ledger records by activity, and the product's own
    count of tokens where its answers report one (chat answers, interview turns)."""

    mix: Mix
    records: dict[str, list[BillingRecord]] = field(default_factory=dict)
    reported: dict[str, Usage] = field(default_factory=dict)
    requests: int = 0

    def all_records(self) -> list[BillingRecord]:
        return [record for records in self.records.values() for record in records]

    def tokens(self, activity: str | None = None) -> Usage:
        records = self.all_records() if activity is None else self.records.get(activity, [])
        total = Usage()
        for record in records:
            total = total + usage_of(record)
        return total

    def dollars(self, model: str, batch_plan: bool) -> float:
        total = 0.0
        for activity, records in self.records.items():
            billing: Billing = "batch" if batch_plan and activity == "plan" else "standard"
            for record in records:
                cost = cost_usd(model, usage_of(record), billing)
                if cost is None:
                    raise ValueError(f"no price for {model}")
                total += cost
        return total


def usage_of(record: BillingRecord) -> Usage:
    return Usage(record.prompt_tokens, record.completion_tokens, cached_prompt_tokens=record.cached_tokens)


@dataclass
class Product:
    """The product as deployed (the local runner) against the fake, and the fake's cache clock."""

    runner: Any
    fake: FakeOpenAIServer
    clock: ManualClock


@contextlib.contextmanager
def product() -> Iterator[Product]:
    """The local runner with the template's functions pointed at a fake OpenAI server that answers at
    once and bills with prompt caching on a clock the benchmark moves."""
    from lambda_agents.observability import logger

    from devtools.runner import LocalRunner
    from devtools.template import load_template

    clock = ManualClock(start=0.0)
    level = logger.log_level
    logger.setLevel("ERROR")  # the functions' logs are not the table (nor a test's output)
    try:
        with FakeOpenAIServer(cache_clock=clock) as fake:
            # As a developer's shell would hold them: the runner passes them to every function.
            shell = {"AI_AGENT_MODE": "openai", "OPENAI_API_KEY": "bench", "OPENAI_BASE_URL": fake.base_url}
            with mock.patch.dict(os.environ, shell), LocalRunner(load_template(), environ=dict(os.environ)) as runner:
                yield Product(runner, fake, clock)
    finally:
        logger.setLevel(level)


def call(
    product: Product, method: str, path: str, body: Any = None, *, user: str, admin: bool = False, query: str = ""
) -> tuple[int, Any, dict[str, str]]:
    """One API request through the runner's front door, as the app (or the employer) sends it."""
    from devtools.runner_api import STAGE, HttpRequest

    identity = ("X-Local-Admin", "bench-employer") if admin else ("X-Local-User", user)
    payload = b"" if body is None else json.dumps(body, ensure_ascii=False).encode()
    called = path if path.startswith(f"/{STAGE}/") else f"/{STAGE}{path}"  # the stage URL, as deployed clients call
    request = HttpRequest(method, called, query, [("Content-Type", "application/json"), identity], payload)
    with contextlib.redirect_stdout(io.StringIO()):  # the functions' logs and metrics
        response = product.runner.handle_http(request)
    headers = {name.lower(): value for name, value in response.headers}
    return response.status, json.loads(response.body or b"null"), headers


def answered(product: Product, sent: tuple[int, Any, dict[str, str]], *, user: str) -> tuple[int, Any]:
    """The answer: at once, or (202, handed to a worker) read from its Location while the runner's
    queues are delivered as Lambda would."""
    status, body, headers = sent
    deadline = time.monotonic() + GIVE_UP_S
    while status == 202:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no answer at {headers.get('location')} within {GIVE_UP_S:.0f} s")
        with contextlib.redirect_stdout(io.StringIO()):
            for queue_id in product.runner.subscriptions:
                product.runner.deliver(queue_id)
        status, body, headers = call(product, "GET", headers["location"], user=user)
    return status, body


def settled(fake: FakeOpenAIServer) -> int:
    """Every request that reached the fake has its ledger record (a record is written just after
    the answer is sent); the number of requests so far."""
    deadline = time.monotonic() + SETTLE_S
    while len(fake.ledger()) < len(fake.requests):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(fake.requests) - len(fake.ledger())} request(s) never billed")
        time.sleep(0.005)
    return len(fake.requests)


# -- the activities ------------------------------------------------------------------------------


def plan_day(product: Product, user: str) -> Usage | None:
    """The user's profile from the app, then the generator's day for them from the queue's message,
    as the hourly scheduler queues it; the plan written as a real one is (``plan_reply``)."""
    from benchmarks.real_speed.answers import plan_reply
    from devtools.runner_event_sources import sqs_event

    profile = {"problems": PROBLEMS, "preferredLanguage": "ja-JP", "timezone": "UTC", "nudgesEnabled": True}
    status, body, _ = call(product, "PUT", "/nudges/profile", profile, user=user)
    if status not in (200, 201):
        raise RuntimeError(f"PUT /nudges/profile -> {status}: {body}")
    product.fake.enqueue(plan_reply())
    today = datetime.now(UTC).date().isoformat()
    message = {
        "MessageId": f"plan-{user}",
        "ReceiptHandle": f"plan-{user}",
        "Body": json.dumps({"userId": user, "localDate": today}),
        "Attributes": {"ApproximateReceiveCount": "1"},
    }
    runner = product.runner
    with contextlib.redirect_stdout(io.StringIO()):
        result = runner.invoke(
            "NudgeGeneratorFunction", sqs_event([message], runner.queues["NudgeQueue"], runner.region)
        )
    if (result or {}).get("batchItemFailures"):
        raise RuntimeError(f"the generator gave {user}'s message back: {result}")
    if product.fake.pending_steps:
        raise RuntimeError("the generator made no model call for the plan")
    return None  # the plan's tokens are in the generator's logs, not in an answer


def app_reads(product: Product, user: str, reads: int) -> None:
    today = datetime.now(UTC).date().isoformat()
    for _ in range(reads):
        status, body, _ = call(product, "GET", "/nudges/schedule", user=user, query=f"date={today}")
        if status != 200 or not body.get("count"):
            raise RuntimeError(f"GET /nudges/schedule -> {status}: {body}")


def chat(product: Product, user: str, messages: int) -> Usage:
    """One conversation of ``messages`` messages, ``GAP_S`` apart; the answers' own usage summed."""
    from benchmarks.real_speed.answers import chat_reply

    status, session, _ = call(
        product, "POST", "/ai-agent/sessions", {"context": {"processType": "中途採用"}}, user=user
    )
    if status != 201:
        raise RuntimeError(f"POST /ai-agent/sessions -> {status}: {session}")
    path = f"/ai-agent/sessions/{session['sessionId']}/messages"
    reported = Usage()
    for number in range(messages):
        if number:
            product.clock.advance(GAP_S)
        product.fake.enqueue(chat_reply())
        # Each user asks in their own words (a neighbour's identical conversation would be cached whole).
        text = CHAT_MESSAGES[number % len(CHAT_MESSAGES)] + f"（{user}、{number + 1}回目）"
        status, body = answered(product, call(product, "POST", path, {"message": text}, user=user), user=user)
        answer = (body or {}).get("aiResponse") or {}
        if status != 200 or answer.get("fallback"):
            raise RuntimeError(f"chat message {number + 1} -> {status}: {answer.get('errorCode')}")
        usage = body["usage"]
        reported = reported + Usage(int(usage["promptTokens"]), int(usage["completionTokens"]))
    if product.fake.pending_steps:  # an answer the product never asked for: the count would be short
        raise RuntimeError("a scripted chat answer was never requested")
    return reported


def interview_job(fields: int) -> dict[str, Any]:
    return {
        "jobId": "job-cost-bench",
        "title": "カフェのバリスタ",
        "fields": [
            {
                "field_id": f"field_{n}",
                "label": f"項目{n}",
                "intent": f"応募者について{n}番目に確認すること",
                "required": True,
                "required_facts": [f"事実{n}"],
                "done_criteria": "Known",
            }
            for n in range(1, fields + 1)
        ],
    }


def interview_script(turns: int) -> list[list[Reply]]:
    """The model's side of an interview of ``turns`` applicant messages (at least 3): the greeting;
    the settings and the plan of ``turns - 2`` fields; then per field its review, and the next
    question and its QuickCheck, or, after the last field, the audit. As the end-to-end test."""
    fields = turns - 2
    question = [f"{n}番目の項目について、詳しく教えていただけますか？" for n in range(1, fields + 1)]
    plan = [
        {"field_id": f"field_{n}", "label": f"項目{n}", "intent": f"確認{n}", "required": True}
        for n in range(1, fields + 1)
    ]
    script = [asked(GREETING), [*settings_and_plan(plan), *asked(question[0])]]
    for n in range(1, fields + 1):
        review = reviewed([{"name": f"事実{n}", "value": f"回答{n}"}])
        if n < fields:
            script.append([*review, *asked(question[n])])
        else:
            script.append([*review, *audited("全項目の回答を確認しました。")])
    return script


def interview(product: Product, user: str, turns: int) -> Usage:
    """An applicant's interview of ``turns`` messages, ``GAP_S`` apart; its stored usage total."""
    script = interview_script(turns)
    job = interview_job(turns - 2)
    call(product, "POST", "/api/admin/jobs", job, user=user, admin=True)  # 201, or 409 once it exists
    status, created, _ = call(product, "POST", "/interviews", {"jobId": job["jobId"]}, user=user)
    if status != 201:
        raise RuntimeError(f"POST /interviews -> {status}: {created}")
    session = created["sessionId"]
    consent = {"accepted": True, "noticeId": created["notice"]["noticeId"]}
    call(product, "POST", f"/interviews/{session}/consent", consent, user=user)
    path = f"/interviews/{session}/messages"
    for number, replies in enumerate(script):
        if number:
            product.clock.advance(GAP_S)
        product.fake.enqueue(*replies)
        opening = "こんにちは、応募しました。日本語で、東京に住んでいます。"
        text = f"{opening}（{user}）" if number < 2 else f"{user}の回答{number - 1}です。"
        status, body = answered(product, call(product, "POST", path, {"text": text}, user=user), user=user)
        if status != 200:
            raise RuntimeError(f"interview turn {number + 1} -> {status}: {body}")
    if product.fake.pending_steps:
        raise RuntimeError(f"{product.fake.pending_steps} scripted interview call(s) were never made")
    status, detail, _ = call(product, "GET", f"/interviews/{session}", user=user)
    if detail.get("status") != "completed":
        raise RuntimeError(f"the interview ended {detail.get('status')!r}, not completed")
    total = detail["usageTotal"]
    return Usage(int(total["promptTokens"]), int(total["completionTokens"]))


# -- one user's day ------------------------------------------------------------------------------


def activities(mix: Mix) -> list[tuple[str, Callable[[Product, str], Usage | None]]]:
    """The mix's activities in the day's order, each (name, play it for a user)."""
    chosen: list[tuple[str, Callable[[Product, str], Usage | None]]] = []
    if mix.plan:
        chosen.append(("plan", plan_day))
    if mix.app_reads:
        chosen.append(("app reads", lambda product, user: app_reads(product, user, mix.app_reads)))
    if mix.chat_messages:
        chosen.append(("chat", lambda product, user: chat(product, user, mix.chat_messages)))
    if mix.interview_turns:
        chosen.append(("interview", lambda product, user: interview(product, user, mix.interview_turns)))
    return chosen


def measure(product: Product, mix: Mix, user: str, *, busy: bool) -> Measured:
    """``user``'s day of ``mix``; ``busy``: another user does each activity ``NEIGHBOUR_LEAD_S``
    before them (their requests are not counted)."""
    measured = Measured(mix)
    for name, play in activities(mix):
        product.clock.advance(DAY_PART_S)
        if busy:
            play(product, f"{user}-neighbour")
            product.clock.advance(NEIGHBOUR_LEAD_S)
        start = settled(product.fake)
        reported = play(product, user)
        end = settled(product.fake)
        measured.records[name] = [r for r in product.fake.ledger() if start <= r.request < end]
        measured.requests += end - start
        if reported is not None:
            measured.reported[name] = reported
    return measured


# -- the table -----------------------------------------------------------------------------------


def table(results: list[tuple[str, Measured]]) -> list[str]:
    lines = [
        "cost per active user per day: the product through the local runner and the real openai client, "
        "tokens as the fake OpenAI server billed them (prompt caching included), priced by llm/prices.py",
        f"{'mix':<8} {'account':<6} {'calls':>5} {'prompt':>8} {'cached':>7} {'output':>7}  "
        f"{'4o sync':>8} {'4o batch':>8} {'mini sync':>9} {'mini batch':>10}  {'x hand sync':>11} {'x hand batch':>12}",
    ]
    for account, measured in results:
        tokens = measured.tokens()
        sync = measured.dollars("gpt-4o", batch_plan=False)
        batch = measured.dollars("gpt-4o", batch_plan=True)
        mini_sync = measured.dollars("gpt-4o-mini", batch_plan=False)
        mini_batch = measured.dollars("gpt-4o-mini", batch_plan=True)
        hand_sync, hand_batch = HAND_COMPUTED[measured.mix.name]
        lines.append(
            f"{measured.mix.name:<8} {account:<6} {len(measured.all_records()):>5} {tokens.prompt_tokens:>8,} "
            f"{tokens.cached_prompt_tokens:>7,} {tokens.completion_tokens:>7,}  ${sync:>7.4f} ${batch:>7.4f} "
            f"${mini_sync:>8.4f} ${mini_batch:>9.4f}  {sync / hand_sync:>11.2f} {batch / hand_batch:>12.2f}"
        )
    lines.append(
        "baseline (x hand): the hand-computed gpt-4o figures, light $0.034 / $0.017, typical $0.12 / $0.10, "
        "heavy $0.86 / $0.84 (synchronous / nudge plan by the Batch API)"
    )
    return lines


def by_activity(results: list[tuple[str, Measured]]) -> list[str]:
    lines = [
        "",
        "by activity (the busy account's heavy user; alone in brackets where it differs): calls, tokens, gpt-4o $",
    ]
    heavy = {account: m for account, m in results if m.mix.name == "heavy"}
    busy, alone = heavy.get("busy"), heavy.get("alone")
    if busy is None:
        return []
    for name, records in busy.records.items():
        tokens = busy.tokens(name)
        dollars = sum(cost_usd("gpt-4o", usage_of(record)) or 0.0 for record in records)
        alone_cached = alone.tokens(name).cached_prompt_tokens if alone is not None else tokens.cached_prompt_tokens
        cached = f"{tokens.cached_prompt_tokens:,}" + (
            f" [{alone_cached:,}]" if alone_cached != tokens.cached_prompt_tokens else ""
        )
        lines.append(
            f"  {name:<10} {len(records):>3} calls  prompt {tokens.prompt_tokens:>7,}  cached {cached:<16} "
            f"output {tokens.completion_tokens:>6,}  ${dollars:.4f}"
        )
    reported = {name: usage for name, usage in busy.reported.items()}
    checks = []
    for name, usage in reported.items():
        billed = busy.tokens(name)
        same = (usage.prompt_tokens, usage.completion_tokens) == (billed.prompt_tokens, billed.completion_tokens)
        checks.append(f"{name} {'equal' if same else 'DIFFERENT'} ({usage.total_tokens:,} / {billed.total_tokens:,})")
    lines.append("the product's own count against the ledger's (prompt + output): " + "; ".join(checks))
    return lines


def run(mixes: list[Mix]) -> list[tuple[str, Measured]]:
    results: list[tuple[str, Measured]] = []
    with product() as running:
        for busy in (False, True):
            account = "busy" if busy else "alone"
            for mix in mixes:
                results.append((account, measure(running, mix, f"cost-{mix.name}-{account}", busy=busy)))
    return results


def main() -> None:
    started = time.perf_counter()
    results = run(MIXES)
    for line in table(results) + by_activity(results):
        print(line)
    print(
        f"each day's activities {DAY_PART_S / 3600:.0f} h apart (a cold cache), messages and turns {GAP_S:.0f} s "
        f"apart, the fake's prompt cache kept {DEFAULT_RETENTION_S:.0f} s after last use; answers: plan ~3,000 "
        f"tokens, chat ~1,000 ({time.perf_counter() - started:.1f} s)"
    )


if __name__ == "__main__":
    benchmark_arguments(__file__, __doc__)
    main()
