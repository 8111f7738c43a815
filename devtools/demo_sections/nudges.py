"""`make demo` section: nudge generation (docs/nudges.md) and the pending-posts API, end to end.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from lambda_agents.llm.prices import Billing, cost_usd
from lambda_agents.llm.types import Usage
from lambda_agents.nudges.profile import UserProfile

from devtools.fake_openai import BatchScript, Reply
from devtools.leftovers import every_table, items_mentioning
from devtools.local_aws import put_profiles
from devtools.runner_local import generation_moment

if TYPE_CHECKING:
    from devtools.demo import DemoContext

# The latest 05:05 in Tokyo at or before now, when the hourly rule makes Tokyo's users due (the moment
# `make serve`'s POST /_local/nudges/day picks too). The generator only takes dates near a user's today.
SCHEDULED_AT = generation_moment(datetime.now(UTC), "Asia/Tokyo", generation_hour=5, cron_minute=5)
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
    profiles = [
        UserProfile(
            user_id=user_id,
            problems=problems,
            preferred_language=language,
            timezone=zone,
            app_version="2.4.0",
            nudges_enabled=enabled,
        )
        for user_id, language, zone, problems, enabled in USERS
        if user_id != APP_USER
    ]
    put_profiles(ctx.dynamodb, *profiles)


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


def _app(ctx: DemoContext, method: str, path: str, user: str, body: Any = None, query: str = "") -> tuple[int, Any]:
    """The user-facing API over the runner's HTTP front door, on its stage URL (identity from X-Local-User)."""
    return ctx.http(ctx.request(method, path, body, [("X-Local-User", user)], query))


def _profiles_from_the_app(ctx: Any) -> None:
    _, _, zone, problems, enabled = next(user for user in USERS if user[0] == APP_USER)
    profile = {"problems": problems, "preferredLanguage": "ja-JP", "timezone": zone, "nudgesEnabled": enabled}
    status, body = _app(ctx, "PUT", "/nudges/profile", APP_USER, profile)
    switch = "on" if body["nudgesEnabled"] else "off"
    ctx.line(
        f"PUT /nudges/profile as {APP_USER} (ja-JP) -> {status}: language {body['preferredLanguage']}, "
        f"zone {body['timezone']}, problems {', '.join(body['problems'])}, nudges {switch}"
    )
    status, body = _app(ctx, "PUT", "/nudges/profile", "demo-fallback", {**profile, "preferredLanguage": "fr"})
    refused = body["error"]["details"][0]
    ctx.line(f"the same with 'fr' -> {status} on {refused['field']}: {refused['message']}")


def _day_in_the_app(ctx: Any) -> None:
    status, day = _app(ctx, "GET", "/nudges/schedule", APP_USER, query=f"date={DATE}")
    ctx.line(
        f"GET /nudges/schedule?date={DATE} as {APP_USER} -> {status}, {day['count']} nudges; fields: {', '.join(day)}"
    )
    ctx.table(
        ["slot", "local", "scheduledAt", "tone", "hook"],
        [[n["slotIndex"], n["localTime"], n["scheduledAt"], n["tone"], n["hook"]] for n in day["nudges"][:3]],
    )
    status, other = _app(ctx, "GET", "/nudges/schedule", "someone-else", query=f"date={DATE}")
    ctx.line(f"another user asks for that date -> {status} {other['error']['code']} (their own day: none)")


# Why a batch job's answer was not stored (nudges/plan_batches.py), in words.
BATCH_REASONS = {"length": "cut off at its token limit (the generator makes that day)"}


def _counts(counts: dict[str, Any]) -> str:
    """``{"UsersTable": 1, "SchedulesTable": 10}`` as "UsersTable 1, SchedulesTable 10"."""
    return ", ".join(f"{name} {count}" for name, count in counts.items())


def _failed_messages(result: dict[str, Any]) -> str:
    """A queue consumer's answer (its batchItemFailures), in words."""
    failed = len(result["batchItemFailures"])
    return (
        "no message failed (none to deliver again)"
        if not failed
        else f"{failed} messages failed, to be delivered again"
    )


def _delivered(report: Any) -> str:
    """A queue's delivery report in words."""
    said = f"{report.batches} batch{'es' if report.batches != 1 else ''}, {report.succeeded} days made"
    failed = report.failed_deliveries + report.left_in_queue + report.moved_to_dead_letter_queue
    return said + (", none failed or left in the queue" if not failed else f"; {report.summary()}")


def _answer_in_words(attempt: dict[str, Any]) -> str:
    """One Commander attempt: "answered" when the model finished, else why it did not."""
    if attempt["outcome"] == "ok":
        return "answered" if attempt.get("finish_reason") == "stop" else f"answered ({attempt.get('finish_reason')})"
    return {"refusal": "refused", "length": "truncated"}.get(
        attempt["outcome"], str(attempt["outcome"]).replace("_", " ")
    )


def _pending_of(ctx: Any, user_id: str) -> int:
    count = 0
    for platform, key in (("tiktok", "tiktokPosts"), ("x", "xPosts")):
        _, body = _api(ctx, "GET", f"/api/admin/{platform}/pending")
        count += sum(1 for post in body[key] if post["sourceUserId"] == user_id)
    return count


def _leaving(ctx: Any) -> None:
    """The app's user deletes their nudge data: nothing of it left in any table."""
    held = {name: len(hits) for name, hits in items_mentioning(ctx.dynamodb, APP_USER).items()}
    ctx.line(f"items naming {APP_USER}: {_counts(held)}; their posts waiting to publish: {_pending_of(ctx, APP_USER)}")
    status, body = _app(ctx, "DELETE", "/nudges/profile", APP_USER)
    ctx.line(f"DELETE /nudges/profile as {APP_USER} -> {status}, deleted: {_counts(body['deleted'])}")
    left = (
        _counts({name: len(hits) for name, hits in items_mentioning(ctx.dynamodb, APP_USER).items()}) or "nothing left"
    )
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

    from lambda_agents.nudges.batch_answers import requested_user

    import functions.nudge_batches.app as batches
    import functions.nudge_generator.app as generator

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
            key_of=requested_user,  # each line's custom_id is the cohort's request id for its user
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
    stored = collected["collected"].get("generated", 0)
    why = ", ".join(f"{count} {BATCH_REASONS.get(reason, reason)}" for reason, count in collected["unusable"].items())
    ctx.line(f"the finished job's answers: {stored} stored as that day's plan; not usable: {why or 'none'}")
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
    by_job = [user for user, made in made_by.items() if made]
    by_generator = [user for user, made in made_by.items() if not made]
    ctx.line(
        f"at the generation hour the generator made {', '.join(by_generator)}'s day itself "
        f"({len(synchronous) - calls_before} synchronous call); {', '.join(by_job)}'s came from the batch job; "
        f"{_failed_messages(result)}"
    )

    def dollars(records: list[Any], billing: Billing = "standard") -> float:
        usage = Usage(sum(r.prompt_tokens for r in records), sum(r.completion_tokens for r in records))
        return cost_usd("gpt-4o", usage, billing) or 0.0

    ctx.line(
        f"billed: {len(batched)} batch answers ${dollars(batched, 'batch'):.4f} (half of "
        f"${dollars(batched):.4f}); the last synchronous call ${dollars(synchronous[-1:]):.4f}"
    )


def run(ctx: Any) -> None:
    import functions.nudge_generator.app as generator

    ctx.section(
        "Nudges: Commander agent, slot table, fallback, pending posts",
        "A day of nudges per user: the app's profile, the hourly scheduler, the generator, its fallback, posts.",
    )
    _profiles_from_the_app(ctx)
    _seed(ctx)
    ctx.use_function("NudgeGeneratorFunction")
    queued = ctx.invoke("NudgeSchedulerFunction", {"time": SCHEDULE_TIME, "detail-type": "Scheduled Event"})
    ctx.line(
        f"the hourly scheduler fired at {SCHEDULE_TIME} (05:05 in Tokyo): {queued['queued']} users queued, those of "
        f"the {queued['dueTimezones']} zones whose clock reached the generation hour"
    )
    with contextlib.redirect_stdout(ctx.log):  # function logs and metrics go to the demo's log
        report = ctx.runner.deliver("NudgeQueue")
    ctx.line(f"the generator took them from the queue: {_delivered(report)}")

    ctx.use_function("NudgeGeneratorFunction", ctx.openai_env())
    generator.dependencies.reset()  # switch the generator from the offline model to the openai client
    ctx.fake_openai.enqueue(Reply(content=None, refusal="I can't help with that."))
    result = ctx.invoke("NudgeGeneratorFunction", _sqs_event({"userId": "demo-fallback", "localDate": DATE}))
    ctx.line(
        "demo-fallback through the real openai client, the fake server refusing: its day is the rule-based "
        f"fallback, {_failed_messages(result)}"
    )
    before = len(ctx.fake_openai.requests)
    again = ctx.invoke("NudgeGeneratorFunction", _sqs_event({"userId": "demo-fallback", "localDate": DATE}))
    after = len(ctx.fake_openai.requests)
    calls = "no second model call" if after == before else f"{after - before} more model calls"
    ctx.line(f"the same message delivered again: the stored day answers it, {calls}, {_failed_messages(again)}")

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
                f"yes ({item['fallbackReason']})" if item.get("fallbackReason") else "no",
                ", ".join(_answer_in_words(a) for a in item["attempts"]),
                nudges[0]["hook"],
            ]
        )
    ctx.table(["user", "lang", "slots", "nudges on", "posts on", "fallback", "the model's answer", "first hook"], rows)
    ctx.line("demo-off (nudges off) was not queued; demo-fallback's stored row says 'fr' and got English")
    _day_in_the_app(ctx)

    ctx.use_function("PendingPostsFunction")
    for platform in ("tiktok", "x"):
        status, body = _api(ctx, "GET", f"/api/admin/{platform}/pending", {"date": DATE})
        posts = body["tiktokPosts" if platform == "tiktok" else "xPosts"]
        owners = sorted({p["sourceUserId"] for p in posts})
        ctx.line(
            f"GET /api/admin/{platform}/pending?date={DATE} -> {status}, {len(posts)} posts from {', '.join(owners)}"
        )
    status, body = _api(ctx, "GET", "/api/admin/tiktok/pending", {"date": DATE, "slot": "morning"})
    post_id = body["tiktokPosts"][0]["postId"]
    for attempt in (1, 2):
        status, answer = _api(ctx, "POST", f"/api/admin/tiktok/posts/{post_id}/posted")
        said = "already marked posted (a retry changes nothing)" if answer["alreadyPosted"] else "marked posted"
        ctx.line(f"POST .../tiktok/posts/{post_id[:14]}…/posted, try {attempt} -> {status}: {said}")
    status, body = _api(ctx, "GET", "/api/admin/tiktok/pending", {"date": DATE, "slot": "morning"})
    ctx.line(f"tiktok morning pending after publishing: {body['count']}")
    status, body = _api(ctx, "GET", "/api/admin/x/pending", {"slot": "noon"})
    ctx.line(f"GET /api/admin/x/pending?slot=noon -> {status} {body['error']['message']}")
    _batch_api(ctx)
    _leaving(ctx)
