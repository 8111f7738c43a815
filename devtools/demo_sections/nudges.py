"""`make demo` section: nudge generation (spec 000) and the pending-posts API, end to end.

Seeds sample users, lets the hourly scheduler queue the ones whose local generation hour has
come, drains the queue into the generator (offline model: ja with 6 slots, en with 15), runs one
user through the real openai client against the fake server answering with a refusal (the
fallback path: every slot still gets a nudge, no post becomes pending), redelivers a message
(no second LLM call), then calls both pending endpoints and publishes one post twice. One user's
profile is set by the app itself (``PUT /nudges/profile``; a language with no nudges is refused),
and the app reads that user's day (``GET /nudges/schedule``) without any of the agent's internals.
At the end that user deletes their nudge data (``DELETE /nudges/profile``) and a scan of every table
finds nothing of them, and no post of theirs is pending any more.
"""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from devtools.fake_openai import Reply
from devtools.leftovers import every_table, items_mentioning
from devtools.runner_api import HttpRequest


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
    from boto3.dynamodb.types import TypeDeserializer

    item = ctx.dynamodb.get_item(
        TableName="SchedulesTable", Key={"pk": {"S": f"USER#{user_id}"}, "sk": {"S": f"SCHEDULE#{DATE}"}}
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
    """The user-facing API over the runner's HTTP front door (identity from X-Local-User)."""
    payload = b"" if body is None else json.dumps(body, ensure_ascii=False).encode()
    headers = [("Content-Type", "application/json"), ("X-Local-User", user)]
    with contextlib.redirect_stdout(ctx.log):
        response = ctx.runner.handle_http(HttpRequest(method, path, query, headers, payload))
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


def run(ctx: Any) -> None:
    import functions.nudge_generator.app as generator

    ctx.section("Nudges: Commander agent, slot table, fallback, pending posts (spec 000)")
    _profiles_from_the_app(ctx)
    _seed(ctx)
    ctx.use_function("NudgeGeneratorFunction")
    queued = ctx.invoke("NudgeSchedulerFunction", {"time": SCHEDULE_TIME, "detail-type": "Scheduled Event"})
    ctx.line(f"scheduler at {SCHEDULE_TIME}: {queued['queued']} users queued ({queued['dueTimezones']} due timezones)")
    with contextlib.redirect_stdout(ctx.log):  # function logs and metrics go to the demo's log
        report = ctx.runner.deliver("NudgeQueue")
    ctx.line(f"queue drained into the generator: {report.summary()}")

    ctx.use_function("NudgeGeneratorFunction", ctx.openai_env())
    generator._ports.cache_clear()  # switch the generator from the offline model to the openai client
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
    _leaving(ctx)
