"""`make demo` section: the chat-message API and process templates (docs/chat-and-templates.md), end to end.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from devtools.fake_openai import Fault, Reply
from devtools.leftovers import every_table, items_mentioning
from devtools.runner_event_sources import sqs_event

if TYPE_CHECKING:
    from devtools.demo import DemoContext

USER = "demo-chat-user"
CONTEXT = {"industry": "IT", "processType": "中途採用", "goal": "4月1日入社", "region": "東京"}
CYCLE = {
    "name": "壊れた案",
    "stepTemplates": [
        {"seq": 1, "name": "企画", "basis": "goal", "offsetDays": -30, "dependsOn": []},
        {"seq": 2, "name": "設計", "basis": "prev", "offsetDays": 7, "dependsOn": [3]},
        {"seq": 3, "name": "実装", "basis": "prev", "offsetDays": 7, "dependsOn": [2]},
    ],
}

BROKEN_ANSWER = '工程を整理しました。\n```json\n{"schema": "ai_chat_process_template.v1",\n```'


def _http(
    ctx: DemoContext,
    method: str,
    path: str,
    body: Any = None,
    query: str = "",
    user: str = USER,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    return ctx.http(ctx.request(method, path, body, [("X-Local-User", user), *(headers or {}).items()], query))


def _event(ctx: DemoContext, path: str, body: Any, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """The event API Gateway sends for a POST on the stage URL, for ctx.invoke."""
    return ctx.proxy_event(ctx.request("POST", path, body, [("X-Local-User", USER), *(headers or {}).items()]))[1]


def _show_answer(ctx: Any, status: int, body: dict[str, Any]) -> None:
    ai = body["aiResponse"]
    draft = ai["templateDraft"] or {}
    state = f"JSON ok, {draft.get('stepCount')} steps" if draft.get("ok") else f"no JSON ({draft.get('errorClass')})"
    if ai["fallback"]:
        state = f"the fallback answer, errorCode {ai['errorCode']}"
    ctx.line(f"assistant -> {status}, {body['usage']['tokens']} tokens, {state}:")
    prose, _, fence = ai["content"].partition("```json\n")
    for line in prose.strip().splitlines():
        ctx.line(f"    {line}")
    if fence:
        ctx.line(f"    ```json {fence[:70]}… ```")


def _template_items(ctx: Any) -> int:
    return int(ctx.dynamodb.scan(TableName="ProcessTemplatesTable", Select="COUNT")["Count"])


def run(ctx: Any) -> None:
    from functions.chat import app as chat_app

    ctx.section(
        "Chat with a JSON fence, and process templates",
        "A Japanese hiring chat whose answers end with a checked JSON plan, kept as a process template, then deleted.",
    )
    ctx.use_function("ChatFunction")
    chat_app.dependencies.reset()
    status, session = _http(ctx, "POST", "/ai-agent/sessions", {"context": CONTEXT})
    session_id = session["sessionId"]
    context = ", ".join(f"{key} {value}" for key, value in CONTEXT.items())
    ctx.line(f"POST /ai-agent/sessions -> {status}, session {session_id[:8]}…, context: {context}")
    for message in ("エンジニア1名の中途採用の段取りを作りたいです", "面接は2回にしてください"):
        ctx.line(f"user: {message}")
        status, body = _http(ctx, "POST", f"/ai-agent/sessions/{session_id}/messages", {"message": message})
        _show_answer(ctx, status, body)
    ctx.line(f"conversation: {[(m['seq'], m['role']) for m in body['conversation']]}")

    path = f"/ai-agent/sessions/{session_id}/process-template"
    status, template = _http(ctx, "POST", path)
    ctx.line(f"POST …/process-template -> {status}: template {template['templateId'][:8]}… {template['name']!r}")
    seq_of = {step["stepId"]: step["seq"] for step in template["steps"]}
    ctx.table(
        ["seq", "step", "basis", "offsetDays", "stepId", "dependsOn (ids -> seq)"],
        [
            [
                s["seq"],
                s["name"],
                s["basis"],
                s["offsetDays"],
                s["stepId"][:8] + "…",
                ", ".join(f"{d[:8]}…={seq_of[d]}" for d in s["dependsOn"]) or "-",
            ]
            for s in template["steps"]
        ],
    )
    status, again = _http(ctx, "POST", path)
    same = again["templateId"] == template["templateId"]
    ctx.line(f"the same request again -> {status}, created={again['created']}, same template: {same}")

    for query in ("中途採用のﾌﾟﾛｾｽ", "中途採用 ﾌﾟﾛｾｽ", "新卒採用"):
        status, found = _http(ctx, "GET", "/process-templates", query=f"search={query}")
        hits = ", ".join(f"{hit['name']} ({hit['score']})" for hit in found["items"]) or "no match"
        ctx.line(f"GET /process-templates?search={query} -> {status}: {hits}")

    before = _template_items(ctx)
    status, rejected = _http(ctx, "POST", "/process-templates", CYCLE)
    error = rejected["error"]
    ctx.line(f"POST /process-templates with 2 -> 3 -> 2 -> {status} {error['code']}: {error['message']}")
    ctx.line(f"ProcessTemplatesTable items before / after the rejected template: {before} / {_template_items(ctx)}")
    status, _ = _http(ctx, "POST", path, user="someone-else")
    ctx.line(f"another user asks for the same session's template -> {status}")

    ctx.use_function("ChatFunction", ctx.openai_env())
    chat_app.dependencies.reset()  # switch ChatFunction from the offline model to the openai client
    try:
        ctx.fake_openai.enqueue(Fault(status=429, retry_after=0.1), Fault(status=429, retry_after=0.1))
        messages = f"/ai-agent/sessions/{session_id}/messages"
        result = ctx.invoke("ChatFunction", _event(ctx, messages, {"message": "急ぎです"}))
        ctx.line("through the openai client; the fake server answers 429 twice (one retry after 1.5 s):")
        _show_answer(ctx, result["statusCode"], json.loads(result["body"]))
        ctx.fake_openai.enqueue(Reply(content=BROKEN_ANSWER))
        result = ctx.invoke("ChatFunction", _event(ctx, messages, {"message": "もう一度"}))
        ctx.line("the fake server answers with a broken JSON fence:")
        _show_answer(ctx, result["statusCode"], json.loads(result["body"]))
        conversation = json.loads(result["body"])["conversation"]
        ctx.line(f"stored: {[(m['seq'], m['role'], m['kind']) for m in conversation[4:]]}")
        _answered_later(ctx, chat_app, messages)
    finally:
        ctx.use_function("ChatFunction", {"AI_AGENT_MODE": "mock"})
        chat_app.dependencies.reset()
    _manage(ctx, session_id, template["templateId"])


def _answered_later(ctx: Any, chat_app: Any, messages: str) -> None:
    """An answer read when it is ready, as every answer that cannot be written in API Gateway's 29 s
    at the model's pace is (here the client asks for it with ``Prefer: respond-async``)."""
    from functions.chat_answers import app as answers_app

    ctx.use_function("ChatAnswerFunction", ctx.openai_env())
    answers_app.dependencies.reset()
    ctx.fake_openai.enqueue(Reply(content="承知しました。" * 200))
    event = _event(ctx, messages, {"message": "内定後の手続きまで詳しく"}, {"Prefer": "respond-async"})
    result = ctx.invoke("ChatFunction", event)
    headers = {**(result.get("headers") or {})}
    headers.update({name: values[-1] for name, values in (result.get("multiValueHeaders") or {}).items() if values})
    ctx.line(
        f"Prefer: respond-async (what a 1,200-token answer at a slow hour's 20 tokens/s gets anyway) -> "
        f"{result['statusCode']}, Location {headers.get('Location')}, Retry-After {headers.get('Retry-After')}"
    )
    url = ctx.runner.queue_urls["ChatAnswersQueue"]
    (message,) = ctx.sqs.receive_message(QueueUrl=url, AttributeNames=["All"])["Messages"]
    ctx.invoke("ChatAnswerFunction", sqs_event([message], ctx.runner.queues["ChatAnswersQueue"], ctx.runner.region))
    ctx.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    status, body = _http(ctx, "GET", headers["Location"])
    ai = body["aiResponse"]
    ctx.line(
        f"ChatAnswerFunction writes it from ChatAnswersQueue; GET the Location -> {status}: seq {ai['seq']}, "
        f"{body['usage']['completionTokens']} tokens, the model's answer (fallback {str(ai['fallback']).lower()})"
    )


def _manage(ctx: Any, session_id: str, template_id: str) -> None:
    """The other half: read back, change, and delete with nothing left."""
    key = {"Idempotency-Key": "demo-last-question"}
    status, _ = _http(
        ctx, "POST", f"/ai-agent/sessions/{session_id}/messages", {"message": "最後の確認です"}, headers=key
    )
    ctx.line(f"one more message with Idempotency-Key -> {status} (its answer is also kept as a retry record)")
    status, listing = _http(ctx, "GET", "/ai-agent/sessions")
    sessions = [(s["sessionId"][:8] + "…", s["context"]["processType"]) for s in listing["items"]]
    ctx.line(f"GET /ai-agent/sessions -> {status}: {sessions}")
    pages, cursor = [], None
    while True:
        query = "limit=4" + (f"&cursor={cursor}" if cursor else "")
        status, page = _http(ctx, "GET", f"/ai-agent/sessions/{session_id}", query=query)
        pages.append([m["seq"] for m in page["messages"]])
        cursor = page["nextCursor"]
        if cursor is None:
            break
    ctx.line(f"GET /ai-agent/sessions/{session_id[:8]}…?limit=4, then by nextCursor -> pages {pages}")
    status, _ = _http(ctx, "GET", f"/ai-agent/sessions/{session_id}", query="cursor=bm90LW91cnM")
    ctx.line(f"a cursor this API did not issue -> {status}")

    path = f"/process-templates/{template_id}"
    status, renamed = _http(ctx, "PATCH", path, {"name": "中途採用（エンジニア）"}, headers={"If-Match": '"1"'})
    ctx.line(f'PATCH {path[:27]}… If-Match "1" -> {status}: {renamed["name"]!r}, version {renamed["version"]}')
    status, stale = _http(ctx, "PATCH", path, {"name": "古い版から"}, headers={"If-Match": '"1"'})
    ctx.line(f"the same If-Match again -> {status} {stale['error']['code']} {stale['error']['details']}")
    near = {"name": "中途採用 (エンジニア)", "stepTemplates": CYCLE["stepTemplates"][:1]}
    status, created = _http(ctx, "POST", "/process-templates", near)
    similar = ", ".join(f"{hit['name']} ({hit['score']})" for hit in created["similar"])
    ctx.line(f"POST /process-templates {near['name']!r} -> {status}, created; similar: {similar}")

    traces = (session_id, "最後の確認です")  # its id, and a text only it (and its retry record) holds
    ctx.line(f"items holding the session's id or its last message: {_counts(_traces(ctx, traces))}")
    status, deleted = _http(ctx, "DELETE", f"/ai-agent/sessions/{session_id}")
    ctx.line(
        f"DELETE /ai-agent/sessions/{session_id[:8]}… -> {status}, deleted: {_counts(deleted['deleted'])}; "
        f"templates detached from it: {deleted['templatesDetached']}"
    )
    left = _counts(_traces(ctx, traces)) or "nothing left"
    ctx.line(f"the same scan of all {len(every_table(ctx.dynamodb))} tables after the deletion: {left}")
    status, _ = _http(ctx, "GET", f"/ai-agent/sessions/{session_id}")
    _, kept = _http(ctx, "GET", path)
    source = ", ".join(f"{key} {value}" for key, value in kept["source"].items())
    ctx.line(f"GET the session -> {status}; the template made from it stays, its source now: {source}")
    for made in (template_id, created["templateId"]):
        status, gone = _http(ctx, "DELETE", f"/process-templates/{made}")
        left_over = len(items_mentioning(ctx.dynamodb, made))
        ctx.line(f"DELETE /process-templates/{made[:8]}… -> {status}, {gone['deletedSteps']} steps; left: {left_over}")


def _counts(counts: dict[str, Any]) -> str:
    """``{"ChatTable": 22}`` as "ChatTable 22"."""
    return ", ".join(f"{name} {count}" for name, count in counts.items())


def _traces(ctx: Any, needles: tuple[str, ...]) -> dict[str, int]:
    """Per table, how many items hold any of ``needles`` (every table of the template scanned)."""
    found: dict[str, set[str]] = {}
    for needle in needles:
        for name, hits in items_mentioning(ctx.dynamodb, needle).items():
            found.setdefault(name, set()).update(json.dumps(hit, sort_keys=True) for hit in hits)
    return {name: len(hits) for name, hits in sorted(found.items())}
