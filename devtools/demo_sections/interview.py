"""`make demo` section: the job-application interview (docs/interview.md), both sides, through the local
runner's API (identity from its ``X-Local-Admin`` / ``X-Local-User`` headers).

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from devtools.fake_openai.interview_replies import asked, settings_and_plan, tool, verdict
from devtools.runner_api import proxy_response_to_http

if TYPE_CHECKING:
    from devtools.demo import DemoContext

APPLICANT = "demo-applicant"
EMPLOYER = "hiring-team"
FAILED_CHECK = {"passed": False, "violations": [{"type": "prohibited_topic", "message": "家族について尋ねています"}]}
JOB: dict[str, Any] = {
    "jobId": "job-cafe-barista",
    "title": "カフェのバリスタ",
    "fields": [
        {
            "field_id": "hobby",
            "label": "趣味",
            "intent": "Small talk to put the applicant at ease",
            "required": False,
            "required_facts": [],
            "done_criteria": "Any answer, or a polite decline",
        },
        {
            "field_id": "experience",
            "label": "バリスタ経験",
            "intent": "How long and where the applicant worked as a barista",
            "required": True,
            "required_facts": ["経験年数", "勤務先"],
            "done_criteria": "Both the number of years and a workplace are known",
        },
        {
            "field_id": "motivation",
            "label": "志望動機",
            "intent": "Why the applicant wants this job",
            "required": True,
            "required_facts": ["理由"],
            "done_criteria": "A concrete reason is given",
        },
    ],
}
SCRIPT = [
    "こんにちは、求人を見て応募しました。",
    "日本語でお願いします。日本に住んでいます。",
    "東京のカフェ森で5年間バリスタをしていました。",
    "好きです",
    "コーヒーが大好きで、お客様と話す時間が一番楽しいからです。",
    "休日は自家焙煎のコーヒーを淹れたり、読書をしたりしています。",
]


def _call(
    ctx: DemoContext,
    method: str,
    path: str,
    body: Any = None,
    *,
    user: str = APPLICANT,
    key: str | None = None,
    query: str = "",
) -> Any:
    """The runner's own HTTP path (route match, local identity headers -> request context), invoked
    through ctx.invoke so this section's environment overrides apply."""
    identity = ("X-Local-Admin", EMPLOYER) if path.startswith("/api/admin/") else ("X-Local-User", user)
    headers = [identity, *([("Idempotency-Key", key)] if key is not None else [])]
    function_id, event = ctx.proxy_event(ctx.request(method, path, body, headers, query))
    response = proxy_response_to_http(ctx.invoke(function_id, event))
    return response.status, json.loads(response.body or b"null")


def _clip(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:chars] + "…"


def _run_step_chains(session_id: str) -> list[tuple[str, list[str]]]:
    from lambda_agents.storage.run_steps import DynamoRunStepRecorder

    chains: dict[str, list[str]] = {}
    for step in DynamoRunStepRecorder("InterviewsTable").for_session(session_id):
        name = step["toolName"]
        if name == "subtask" and isinstance(step.get("input"), dict):
            name = f"subtask({step['input'].get('agent')})"
        mark = "" if step.get("output", {}).get("status") == "success" else "!"
        chains.setdefault(step["turnId"], []).append(f"{step['agent']}.{name}{mark}")
    return sorted(chains.items())


def _model_calls() -> int:
    from functions.interview import app

    return len(getattr(app.dependencies().model, "calls", []))


def run(ctx: Any) -> None:
    from functions.interview import app
    from functions.jobs import app as jobs

    ctx.section(
        "Interview agents: Greeter, Architect, Interviewer + QuickCheck / Reviewer / Auditor",
        "A job interview from both sides: an employer's job, an applicant answering in Japanese, the team's review.",
    )
    ctx.use_function("InterviewFunction")
    app.dependencies.reset()
    jobs.dependencies.reset()
    team = _subscribe_team(ctx)
    job_id = JOB["jobId"]
    _employer_opens_the_job(ctx, job_id)
    session_id, last = _applicant_answers(ctx, job_id)
    _both_sides_read_it(ctx, team, job_id, session_id)
    _after_the_interview(ctx, team, session_id, last)
    _invariant_through_the_openai_client(ctx)
    status, _ = _call(ctx, "POST", f"/api/admin/jobs/{job_id}/close")
    refused_status, refused = _call(ctx, "POST", "/interviews", {"jobId": job_id})
    code = refused["error"]["code"]
    left_open = len(_call(ctx, "GET", "/jobs")[1]["items"])
    ctx.line(
        f"POST /api/admin/jobs/{{jobId}}/close -> {status}; a new interview -> {refused_status} {code}; "
        f"open jobs listed: {left_open}"
    )
    ctx.use_function("InterviewFunction", {"AI_AGENT_MODE": "mock"})
    app.dependencies.reset()


def _employer_opens_the_job(ctx: Any, job_id: str) -> None:
    ctx.line("the employer (IAM, X-Local-Admin):")
    status, job = _call(ctx, "POST", "/api/admin/jobs", JOB)
    ctx.line(
        f"  POST /api/admin/jobs -> {status}: {job['jobId']} version {job['version']}, {len(job['fields'])} fields"
    )
    edited = {"title": JOB["title"], "fields": [{**f, "intent": f["intent"] + "."} for f in JOB["fields"]]}
    status, job = _call(ctx, "PUT", f"/api/admin/jobs/{job_id}", edited)
    ctx.line(f"  PUT  /api/admin/jobs/{{jobId}} -> {status}: version {job['version']} (a new version; old ones stay)")
    status, catalog = _call(ctx, "GET", "/api/admin/jobs", query="status=open")
    summaries = ", ".join(f"{j['jobId']} (v{j['latestVersion']}, {j['fieldCount']} fields)" for j in catalog["items"])
    ctx.line(f"  GET  /api/admin/jobs?status=open -> {status}: {summaries}")


def _applicant_answers(ctx: Any, job_id: str) -> tuple[str, dict[str, Any]]:
    """The applicant's consent and interview; the session and its last answer."""
    ctx.line("the applicant (Cognito, X-Local-User):")
    status, open_jobs = _call(ctx, "GET", "/jobs")
    listed = "; ".join(
        f"{j['jobId']}: " + ", ".join(f["label"] + ("*" if f["required"] else "") for f in j["fields"])
        for j in open_jobs["items"]
    )
    ctx.line(f"  GET /jobs -> {status}: {listed} (* required; what the notice shows)")
    status, created = _call(ctx, "POST", "/interviews", {"jobId": job_id})
    session_id = created["sessionId"]
    notice = created["notice"]
    ctx.line(
        f"  POST /interviews {{jobId}} -> {status}: session {session_id[:8]}…, job version {created['jobVersion']}"
    )
    ctx.line(f"  notice: {_clip(notice['text']['ja'], 70)}")
    status, refused = _call(ctx, "POST", f"/interviews/{session_id}/messages", {"text": SCRIPT[0]})
    ctx.line(f"  a message before consent -> {status} {refused['error']['code']}")
    status, _ = _call(
        ctx, "POST", f"/interviews/{session_id}/consent", {"accepted": True, "noticeId": notice["noticeId"]}
    )
    ctx.line(f"  POST /interviews/{{id}}/consent -> {status}")
    ctx.line("transcript (offline model; each reply is what the applicant receives):")
    last: dict[str, Any] = {}
    for turn, text in enumerate(SCRIPT, start=1):
        status, last = _call(ctx, "POST", f"/interviews/{session_id}/messages", {"text": text}, key=f"turn-{turn}")
        ctx.line(f"  応募者       {text}")
        agent = last.get("currentAgent") or "system"
        ctx.line(f"  {agent:<12} {last['reply']}  [{last['replyKind']}, {last['usage']['totalTokens']} tokens]")
        if not last["awaitingUserResponse"]:
            break
    return session_id, last


def _both_sides_read_it(ctx: Any, team: str, job_id: str, session_id: str) -> None:
    status, detail = _call(ctx, "GET", f"/interviews/{session_id}")
    settings = detail["state"]
    ctx.line(f"GET /interviews/{{id}} (applicant) -> {status}: status {detail['status']}, version {detail['version']}")
    ctx.line(f"language {settings['language']}, country {settings['country']}, timezone {settings['timezone']}")
    ctx.table(
        ["field (plan order)", "required", "status", "facts"],
        [
            [
                f"{f['field_id']} ({f['label']})",
                "yes" if f["required"] else "no",
                f["status"],
                "; ".join(f"{name}: {_clip(value, 14)}" for name, value in f["facts"].items()),
            ]
            for f in detail["fields"]
        ],
    )
    shown = "audit" in detail or any("audit" in m["data"] for m in detail["messages"])
    tokens = detail["usageTotal"]["totalTokens"]
    ctx.line(f"the audit in the applicant's view: {'SHOWN' if shown else 'no'}; tokens over the interview: {tokens}")
    ctx.line("the hiring team's queue (EventBridge rule on the bus -> SQS):")
    for event in _received(ctx, team):
        ctx.line(f"  {event['detail-type']}: {event['detail']['eventId']}")

    status, listed = _call(ctx, "GET", f"/api/admin/jobs/{job_id}/applications", query="status=completed")
    ctx.line(f"GET /api/admin/jobs/{{jobId}}/applications?status=completed -> {status}: {len(listed['items'])} item(s)")
    status, application = _call(ctx, "GET", f"/api/admin/jobs/{job_id}/applications/{session_id}")
    audit = application["audit"] or {}
    ctx.line(
        f"GET .../applications/{{id}} (employer) -> {status}: job version {application['jobVersion']}, "
        f"{len(application['messages'])} messages, facts of {len(application['collectedFacts'])} fields"
    )
    ctx.line(
        f"  audit: {'passed' if audit.get('passed') else 'NOT passed'}, {len(audit.get('violations', []))} violation(s)"
    )
    ctx.line(f"  summary: {_clip(audit.get('summary', ''), 60)}")


def _after_the_interview(ctx: Any, team: str, session_id: str, last: dict[str, Any]) -> None:
    """Its run steps, a correction, a retried turn, another user's read, the withdrawal."""
    ctx.line("agent steps per turn (RunSteps, recorded before and after every tool; kept 7 days):")
    for number, (_, chain) in enumerate(_run_step_chains(session_id), start=1):
        ctx.line(f"  turn {number}  {' > '.join(chain)}")

    correction = {"text": "コーヒーの香りと、常連のお客様との会話が好きだからです。"}
    status, fixed = _call(ctx, "POST", f"/interviews/{session_id}/fields/motivation/correction", correction)
    ctx.line(f"a correction of 'motivation' -> {status}: reviewed and audited again, {fixed['status']}")
    for event in _received(ctx, team):
        ctx.line(f"  the team's queue: {event['detail-type']} {event['detail']['eventId']}")

    before = _model_calls()
    turn = len(SCRIPT)
    status, again = _call(ctx, "POST", f"/interviews/{session_id}/messages", {"text": SCRIPT[-1]}, key=f"turn-{turn}")
    calls = _model_calls() - before
    ctx.line(f"retry with Idempotency-Key turn-{turn} -> {status}, same answer: {again == last}, model calls: {calls}")
    status, other = _call(ctx, "GET", f"/interviews/{session_id}", user="someone-else")
    ctx.line(f"GET as another user -> {status} {other['error']['code']}")

    status, mine = _call(ctx, "GET", "/interviews")
    found = ", ".join(f"{i['sessionId'][:8]}… {i['jobTitle']} ({i['status']})" for i in mine["items"])
    ctx.line(f"GET /interviews (the applicant's own, to find an id again) -> {status}: {found}")
    status, _ = _call(ctx, "DELETE", f"/interviews/{session_id}")
    left = _items_holding(ctx, session_id)
    ctx.line(f"DELETE /interviews/{{id}} (withdraw) -> {status}: items left in any table: {left}")
    for event in _received(ctx, team):
        ctx.line(f"  the team's queue: {event['detail-type']}")


def _subscribe_team(ctx: Any) -> str:
    """A hiring team's subscription: a rule on the default bus that sends the events to its queue."""
    sqs = ctx.runner.aws.client("sqs")
    events = ctx.runner.aws.client("events")
    url = str(sqs.create_queue(QueueName="demo-hiring-team")["QueueUrl"])
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="demo-applications", EventPattern=json.dumps({"source": ["lambda-agents.interview"]}))
    events.put_targets(Rule="demo-applications", Targets=[{"Id": "team", "Arn": arn}])
    return url


def _received(ctx: Any, url: str) -> list[dict[str, Any]]:
    sqs = ctx.runner.aws.client("sqs")
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    for message in messages:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return [json.loads(message["Body"]) for message in messages]


def _items_holding(ctx: Any, session_id: str) -> int:
    client = ctx.dynamodb
    count = 0
    for name in client.list_tables()["TableNames"]:
        for page in client.get_paginator("scan").paginate(TableName=name):
            count += sum(1 for item in page["Items"] if session_id in json.dumps(item))
    return count


def _invariant_through_the_openai_client(ctx: Any) -> None:
    """A scripted model on the fake server asks a question QuickCheck fails: the violations go
    back to the model, the applicant only ever receives the question that passed."""
    from functions.interview import app

    ctx.use_function("InterviewFunction", ctx.openai_env())
    app.dependencies.reset()
    unchecked = "ご家族のお仕事は何ですか？"
    checked = "これまでのバリスタのご経験を教えてください。"
    ordered = sorted(JOB["fields"], key=lambda field: not field["required"])  # the Architect's order
    plan = [{"field_id": f["field_id"], "label": f["label"], "intent": "", "required": f["required"]} for f in ordered]
    ctx.fake_openai.enqueue(
        *settings_and_plan(plan), tool("ask", message=unchecked), verdict(**FAILED_CHECK), *asked(checked)
    )
    _, created = _call(ctx, "POST", "/interviews", {"jobId": JOB["jobId"]})
    session_id = created["sessionId"]
    _call(
        ctx, "POST", f"/interviews/{session_id}/consent", {"accepted": True, "noticeId": created["notice"]["noticeId"]}
    )
    _, answer = _call(ctx, "POST", f"/interviews/{session_id}/messages", {"text": SCRIPT[1]})
    rejection = json.loads(ctx.fake_openai.requests[-2]["messages"][-1]["content"])["result"]["message"]
    ctx.line("through the real openai client and the fake server, a model that asks what QuickCheck fails:")
    ctx.line(f"  ask({unchecked!r}) -> back to the model: {_clip(rejection, 70)}")
    ctx.line(f"  the applicant receives: {answer['reply']}  (field {answer['currentFieldId']})")
