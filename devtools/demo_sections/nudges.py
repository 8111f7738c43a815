"""`make demo` section: nudge generation (docs/nudges.md) and the pending-posts API, end to end.

Seeds sample users, lets the hourly scheduler queue the ones whose local generation hour has
come, drains the queue into the generator (offline model: ja with 6 slots, en with 15), runs one
user through the real openai client against the fake server answering with a refusal (the
fallback path: every slot still gets a nudge, no post becomes pending), redelivers a message
(no second LLM call), then calls both pending endpoints and publishes one post twice. One user's
profile is set by the app itself (``PUT /nudges/profile``; a language with no nudges is refused),
and the app reads that user's day (``GET /nudges/schedule``) without any of the agent's internals.
Then the Batch API path (NudgeFanoutMode batch_then_sync): Tokyo's cohort for tomorrow goes to the
fake's Batches endpoint as one job, its answers are stored, the one it truncated is made by the
synchronous generator, and the bill of both is shown. At the end that user deletes their nudge
data (``DELETE /nudges/profile``) and a scan of every table finds nothing of them, and no post of
theirs is pending any more.
"""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from devtools.fake_openai import BatchScript, Reply
from devtools.leftovers import every_table, items_mentioning
from devtools.runner_api import STAGE, HttpRequest


def _latest_tokyo_generation_hour(now: datetime) -> datetime:
    """The latest 20:05 UTC (05:05 in Tokyo) at or before ``now``: Tokyo users are due then. The
    generator only takes dates near a user's today, so the demo runs on today's schedule."""
    moment = now.replace(hour=20, minute=5, second=0, microsecond=0)
    return moment if moment <= now else moment - timedelta(days=1)


SCHEDULED_AT = _latest_tokyo_generation_hour(datetime.now(UTC))
SCHEDULE_TIME = SCHEDULED_AT.strftime("%Y-%m-%dT%H:%M:%SZ")
DATE = (SCHEDULED_AT + timedelta(hours=9)).date().isoformat()  # Tokyo's date at that moment
ADMIN = "arn:aws:iam::123456789012:user/release-bot"
USERS = [
    ("demo-ja-6", "ja", "Asia/Tokyo", ["staying_up_late"], True),
    ("demo-en-15", "en", "Asia/Tokyo", ["staying_up_late", "procrastination", "anxiety"], True),
    ("demo-off", "ja", "Asia/Tokyo", ["anxiety"], False),
    ("demo-fallback", "fr", "Europe/Paris", ["self_loathing"], True),
]


APP_USER = "demo-ja-6"  # its profile comes through the app's own route


def _seed(ctx: Any) -> None:
    for user_id, language, zone, problems, enabled in USERS:
        if user_id == APP_USER:
            continue
        ctx.dynamodb.put_item(
            TableName="UsersTable",
            Item={
                "userId": {"S": user_id},
                "preferredLanguage": {"S": language},
                "timezone": {"S": zone},
                "problems": {"L": [{"S": p} for p in problems]},
                "appVersion": {"S": "2.4.0"},
                "nudgesEnabled": {"BOOL": enabled},
            },
        )


def _schedule(ctx: Any, user_id: str) -> dict[str, Any]:
    return _schedule_on(ctx, user_id, DATE)


def _schedule_on(ctx: Any, user_id: str, local_date: str) -> dict[str, Any]:
    from boto3.dynamodb.types import TypeDeserializer

    item = ctx.dynamodb.get_item(
        TableName="SchedulesTable", Key={"pk": {"S": f"USER#{user_id}"}, "sk": {"S": f"SCHEDULE#{local_date}"}}
    )["Item"]
    return {key: TypeDeserializer().deserialize(value) for key, value in item.items()}


def _sqs_event(*jobs: dict[str, str]) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": f"demo-{index}",
                "receiptHandle": f"demo-{index}",
                "body": json.dumps(job),
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:NudgeQueue",
                "awsRegion": "us-east-1",
            }
            for index, job in enumerate(jobs)
        ]
    }


def _api(ctx: Any, method: str, path: str, query: dict[str, str] | None = None) -> tuple[int, Any]:
    event = {
        "resource": path,
        "path": path,
        "httpMethod": method,
        "headers": {},
        "queryStringParameters": query,
        "multiValueQueryStringParameters": {k: [v] for k, v in (query or {}).items()} or None,
        "body": None,
        "isBase64Encoded": False,
        "requestContext": {"resourcePath": path, "httpMethod": method, "identity": {"userArn": ADMIN}},
    }
    result = ctx.invoke("PendingPostsFunction", event)
    return result["statusCode"], json.loads(result["body"])


def _app(ctx: Any, method: str, path: str, user: str, body: Any = None, query: str = "") -> tuple[int, Any]:
    """The user-facing API over the runner's HTTP front door, on its stage URL (identity from X-Local-User)."""
    payload = b"" if body is None else json.dumps(body, ensure_ascii=False).encode()
    headers = [("Content-Type", "application/json"), ("X-Local-User", user)]
    with contextlib.redirect_stdout(ctx.log):
        response = ctx.runner.handle_http(HttpRequest(method, f"/{STAGE}{path}", query, headers, payload))
    return response.status, json.loads(response.body or b"null")


def _profiles_from_the_app(ctx: Any) -> None:
    _, _, zone, problems, enabled = next(user for user in USERS if user[0] == APP_USER)
    profile = {"problems": problems, "preferredLanguage": "ja-JP", "timezone": zone, "nudgesEnabled": enabled}
    status, body = _app(ctx, "PUT", "/nudges/profile", APP_USER, profile)
    ctx.line(f"PUT /nudges/profile as {APP_USER} (ja-JP) -> {status}: {body}")
    status, body = _app(ctx, "PUT", "/nudges/profile", "demo-fallback", {**profile, "preferredLanguage": "fr"})
    ctx.line(f"the same with 'fr' -> {status}: {body['error']['details'][0]}")


def _day_in_the_app(ctx: Any) -> None:
    status, day = _app(ctx, "GET", "/nudges/schedule", APP_USER, query=f"date={DATE}")
    ctx.line(f"GET /nudges/schedule?date={DATE} as {APP_USER} -> {status}, {day['count']} nudges, fields {list(day)}")
    ctx.table(
        ["slot", "local", "scheduledAt", "tone", "hook"],
        [[n["slotIndex"], n["localTime"], n["scheduledAt"], n["tone"], n["hook"]] for n in day["nudges"][:3]],
    )
    status, other = _app(ctx, "GET", "/nudges/schedule", "someone-else", query=f"date={DATE}")
    ctx.line(f"another user asks for that date -> {status} {other['error']['code']} (their own day: none)")


def _pending_of(ctx: Any, user_id: str) -> int:
    count = 0
    for platform, key in (("tiktok", "tiktokPosts"), ("x", "xPosts")):
        _, body = _api(ctx, "GET", f"/api/admin/{platform}/pending")
        count += sum(1 for post in body[key] if post["sourceUserId"] == user_id)
    return count


def _leaving(ctx: Any) -> None:
    """The app's user deletes their nudge data: nothing of it left in any table."""
    held = {name: len(hits) for name, hits in items_mentioning(ctx.dynamodb, APP_USER).items()}
    ctx.line(f"items naming {APP_USER}, per table: {held}; their pending posts: {_pending_of(ctx, APP_USER)}")
    status, body = _app(ctx, "DELETE", "/nudges/profile", APP_USER)
    ctx.line(f"DELETE /nudges/profile as {APP_USER} -> {status}: {body['deleted']}")
    left = {name: len(hits) for name, hits in items_mentioning(ctx.dynamodb, APP_USER).items()} or "nothing left"
    pending = _pending_of(ctx, APP_USER)
    status, _ = _app(ctx, "GET", "/nudges/profile", APP_USER)
    ctx.line(
        f"the same scan of all {len(every_table(ctx.dynamodb))} tables: {left}; pending posts: {pending}; "
        f"GET /nudges/profile -> {status}"
    )


def _valid_plan(user_id: str) -> Reply:
    """A plan that passes the user's own slot table (the fake's default sample does not)."""
    from lambda_agents.llm.offline_model import sample
    from lambda_agents.llm.schema import model_schema
    from lambda_agents.nudges.schema import create_agent_output_model
    from lambda_agents.nudges.slots import DEFAULT_SCHEDULE_MAP, build_slot_table

    language, problems = next((lang, probs) for uid, lang, _, probs, _ in USERS if uid == user_id)
    slots = len(build_slot_table(problems, DEFAULT_SCHEDULE_MAP))
    return Reply(content=json.dumps(sample(model_schema(create_agent_output_model(slots)), language)))


def _batch_api(ctx: Any) -> None:
    """Tokyo's cohort for tomorrow through the Batch API, the truncated answer made synchronously."""
    import time as clock
    from zoneinfo import ZoneInfo

    import functions.nudge_batches.app as batches
    import functions.nudge_generator.app as generator
    from devtools.fanout_sim import BATCH_DISCOUNT, INPUT_USD_PER_M, OUTPUT_USD_PER_M

    now = datetime.now(UTC)
    tokyo_hour = now.astimezone(ZoneInfo("Asia/Tokyo")).hour
    # Tokyo is in its submit hour now (20:00 by default), so the run submits its cohort for tomorrow.
    ctx.use_function("NudgeBatchFunction", {**ctx.openai_env(), "NUDGE_BATCH_SUBMIT_HOUR": str(tokyo_hour)})
    batches.dependencies.reset()
    truncated = Reply(content=_valid_plan("demo-en-15").content, needs_tokens=20_000)
    ctx.fake_openai.batches.script_next(
        BatchScript(
            validating_s=0.05,
            running_s=0.2,
            finalizing_s=0.05,
            answers={"demo-ja-6": _valid_plan("demo-ja-6"), "demo-en-15": truncated},
        )
    )
    event = {"time": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "detail-type": "Scheduled Event"}
    submitted = ctx.invoke("NudgeBatchFunction", event)
    [job] = submitted["submitted"]
    tomorrow = job["localDate"]
    ctx.line(
        f"batch API (NudgeFanoutMode batch_then_sync): {job['timezone']} {tomorrow} sent as {job['batchId']} "
        f"with {job['requests']} requests"
    )
    clock.sleep(0.4)
    collected = ctx.invoke("NudgeBatchFunction", event)
    ctx.line(f"the finished job collected: {collected['collected']}, not stored because {collected['unusable']}")
    ctx.use_function("NudgeGeneratorFunction", ctx.openai_env())
    generator.dependencies.reset()
    ctx.fake_openai.enqueue(_valid_plan("demo-en-15"))
    calls_before = sum(1 for record in ctx.fake_openai.billing if not record.batch)
    jobs = [{"userId": user, "localDate": tomorrow} for user in ("demo-ja-6", "demo-en-15")]
    result = ctx.invoke("NudgeGeneratorFunction", _sqs_event(*jobs))
    synchronous = [record for record in ctx.fake_openai.billing if not record.batch]
    batched = [record for record in ctx.fake_openai.billing if record.batch]
    made_by = {
        user: _schedule_on(ctx, user, tomorrow)["attempts"][0].get("plan") == "batch job"
        for user in ("demo-ja-6", "demo-en-15")
    }
    ctx.line(
        f"at the generation hour the generator: {result}, {len(synchronous) - calls_before} synchronous "
        f"call(s); made by the batch job: {made_by}"
    )

    def dollars(records: list[Any], factor: float) -> float:
        prompt = sum(r.prompt_tokens for r in records)
        completion = sum(r.completion_tokens for r in records)
        return float((prompt * INPUT_USD_PER_M + completion * OUTPUT_USD_PER_M) / 1e6 * factor)

    ctx.line(
        f"billed: {len(batched)} batch answers ${dollars(batched, BATCH_DISCOUNT):.4f} (half of "
        f"${dollars(batched, 1.0):.4f}); the last synchronous call ${dollars(synchronous[-1:], 1.0):.4f}"
    )


def run(ctx: Any) -> None:
    import functions.nudge_generator.app as generator

    ctx.section("Nudges: Commander agent, slot table, fallback, pending posts")
    _profiles_from_the_app(ctx)
    _seed(ctx)
    ctx.use_function("NudgeGeneratorFunction")
    queued = ctx.invoke("NudgeSchedulerFunction", {"time": SCHEDULE_TIME, "detail-type": "Scheduled Event"})
    ctx.line(f"scheduler at {SCHEDULE_TIME}: {queued['queued']} users queued ({queued['dueTimezones']} due timezones)")
    with contextlib.redirect_stdout(ctx.log):  # function logs and metrics go to the demo's log
        report = ctx.runner.deliver("NudgeQueue")
    ctx.line(f"queue drained into the generator: {report.summary()}")

    ctx.use_function("NudgeGeneratorFunction", ctx.openai_env())
    generator.dependencies.reset()  # switch the generator from the offline model to the openai client
    ctx.fake_openai.enqueue(Reply(content=None, refusal="I can't help with that."))
    result = ctx.invoke("NudgeGeneratorFunction", _sqs_event({"userId": "demo-fallback", "localDate": DATE}))
    ctx.line(f"demo-fallback through the openai client, fake server refuses: {result}")
    before = len(ctx.fake_openai.requests)
    again = ctx.invoke("NudgeGeneratorFunction", _sqs_event({"userId": "demo-fallback", "localDate": DATE}))
    after = len(ctx.fake_openai.requests)
    ctx.line(f"same message redelivered: {again}, LLM calls {before} -> {after}")

    rows = []
    for user_id in ("demo-ja-6", "demo-en-15", "demo-fallback"):
        item = _schedule(ctx, user_id)
        output = item["agentRawOutput"]
        nudges = output["appNudges"]
        posts = output["tiktokPosts"] + output["xPosts"]
        rows.append(
            [
                user_id,
                item["language"],
                int(item["slotCount"]),
                f"{sum(1 for n in nudges if n['enabled'])}/{len(nudges)}",
                f"{sum(1 for p in posts if p['enabled'])}/{len(posts)}",
                item.get("fallbackReason") or "-",
                ",".join(str(a["finish_reason"] if a["outcome"] == "ok" else a["outcome"]) for a in item["attempts"]),
                nudges[0]["hook"],
            ]
        )
    ctx.table(["user", "lang", "slots", "nudges on", "posts on", "fallback", "attempts", "first hook"], rows)
    ctx.line("demo-off (nudges off) was not queued; demo-fallback's stored row says 'fr' and got English")
    _day_in_the_app(ctx)

    ctx.use_function("PendingPostsFunction")
    for platform in ("tiktok", "x"):
        status, body = _api(ctx, "GET", f"/api/admin/{platform}/pending", {"date": DATE})
        posts = body["tiktokPosts" if platform == "tiktok" else "xPosts"]
        owners = sorted({p["sourceUserId"] for p in posts})
        ctx.line(f"GET /api/admin/{platform}/pending?date={DATE} -> {status}, {len(posts)} posts from {owners}")
    status, body = _api(ctx, "GET", "/api/admin/tiktok/pending", {"date": DATE, "slot": "morning"})
    post_id = body["tiktokPosts"][0]["postId"]
    for attempt in (1, 2):
        status, answer = _api(ctx, "POST", f"/api/admin/tiktok/posts/{post_id}/posted")
        already = answer["alreadyPosted"]
        ctx.line(f"POST .../tiktok/posts/{post_id[:14]}…/posted #{attempt} -> {status} alreadyPosted={already}")
    status, body = _api(ctx, "GET", "/api/admin/tiktok/pending", {"date": DATE, "slot": "morning"})
    ctx.line(f"tiktok morning pending after publishing: {body['count']}")
    status, body = _api(ctx, "GET", "/api/admin/x/pending", {"slot": "noon"})
    ctx.line(f"GET /api/admin/x/pending?slot=noon -> {status} {body['error']['message']}")
    _batch_api(ctx)
    _leaving(ctx)
