"""`make demo` section: the chat-message API and process templates (spec 001), end to end.

A short Japanese chat through the local runner's HTTP API (identity from ``X-Local-User``) with
the offline model: the answer ends with a valid ``ai_chat_process_template.v1`` fence; the second
message changes the draft. The session's latest draft becomes a template (dependsOn seq -> step
ids, one transaction), a second request returns the same template, the tolerant search finds it
from a half-width / spaced name, a template with a cycle is rejected leaving nothing stored, and
another user gets 404. Then ChatFunction's real openai client meets the fake server: 429 twice
gives fallback D (both messages stored), and a broken JSON fence is stripped from the answer.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from devtools.fake_openai import Fault, Reply
from devtools.runner_api import HttpRequest

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


def _http(ctx: Any, method: str, path: str, body: Any = None, query: str = "", user: str = USER) -> tuple[int, Any]:
    payload = b"" if body is None else json.dumps(body, ensure_ascii=False).encode()
    headers = [("Content-Type", "application/json"), ("X-Local-User", user)]
    with contextlib.redirect_stdout(ctx.log):  # the function's logs and metrics go to the demo's log
        response = ctx.runner.handle_http(HttpRequest(method, path, query, headers, payload))
    return response.status, json.loads(response.body or b"null")


def _event(path: str, body: Any) -> dict[str, Any]:
    """An API Gateway event for ctx.invoke (which applies this section's environment overrides)."""
    return {
        "resource": path,
        "path": path,
        "httpMethod": "POST",
        "headers": {"Content-Type": "application/json"},
        "queryStringParameters": None,
        "body": json.dumps(body, ensure_ascii=False),
        "isBase64Encoded": False,
        "requestContext": {"resourcePath": path, "httpMethod": "POST", "authorizer": {"claims": {"sub": USER}}},
    }


def _show_answer(ctx: Any, status: int, body: dict[str, Any]) -> None:
    ai = body["aiResponse"]
    draft = ai["templateDraft"] or {}
    state = f"JSON ok, {draft.get('stepCount')} steps" if draft.get("ok") else f"no JSON ({draft.get('errorClass')})"
    if ai["fallback"]:
        state = f"fallback D, errorCode {ai['errorCode']}"
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

    ctx.section("Chat with a JSON fence, and process templates (spec 001)")
    ctx.use_function("ChatFunction")
    chat_app._use_case.cache_clear()
    status, session = _http(ctx, "POST", "/ai-agent/sessions", {"context": CONTEXT})
    session_id = session["sessionId"]
    ctx.line(f"POST /ai-agent/sessions -> {status}, session {session_id[:8]}… context {CONTEXT}")
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
    chat_app._use_case.cache_clear()  # switch ChatFunction from the offline model to the openai client
    try:
        ctx.fake_openai.enqueue(Fault(status=429, retry_after=0.1), Fault(status=429, retry_after=0.1))
        messages = f"/ai-agent/sessions/{session_id}/messages"
        result = ctx.invoke("ChatFunction", _event(messages, {"message": "急ぎです"}))
        ctx.line("through the openai client; the fake server answers 429 twice (one retry after 1.5 s):")
        _show_answer(ctx, result["statusCode"], json.loads(result["body"]))
        ctx.fake_openai.enqueue(Reply(content=BROKEN_ANSWER))
        result = ctx.invoke("ChatFunction", _event(messages, {"message": "もう一度"}))
        ctx.line("the fake server answers with a broken JSON fence:")
        _show_answer(ctx, result["statusCode"], json.loads(result["body"]))
        conversation = json.loads(result["body"])["conversation"]
        ctx.line(f"stored: {[(m['seq'], m['role'], m['kind']) for m in conversation[4:]]}")
    finally:
        ctx.use_function("ChatFunction", {"AI_AGENT_MODE": "mock"})
        chat_app._use_case.cache_clear()
