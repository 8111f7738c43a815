"""One user's request at a real model's speed, in a process of its own (a container of its own):
``python -m benchmarks.real_speed.user <workload> <profile> <seed>`` prints one JSON line.

How it works, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

WORKLOADS = ("chat", "interview", "generator")
POLL_S = 1.0
GIVE_UP_S = 600.0


def _request(runner: Any, method: str, path: str, body: Any = None, *, user: str, admin: bool = False) -> Any:
    from devtools.runner_api import STAGE, HttpRequest

    identity = ("X-Local-Admin", "bench-employer") if admin else ("X-Local-User", user)
    payload = b"" if body is None else json.dumps(body, ensure_ascii=False).encode()
    called = path if path.startswith(f"/{STAGE}/") else f"/{STAGE}{path}"  # the stage URL, as deployed clients call
    request = HttpRequest(method, called, "", [("Content-Type", "application/json"), identity], payload)
    response = runner.handle_http(request)
    headers = {name.lower(): value for name, value in response.headers}
    return response.status, json.loads(response.body or b"null"), headers


class Deliveries:
    """The runner's queues delivered every ``every_s`` (a second), as Lambda's pollers do, while a user waits."""

    def __init__(self, runner: Any, every_s: float = POLL_S) -> None:
        self._runner = runner
        self._every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Deliveries:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=GIVE_UP_S)

    def _loop(self) -> None:
        while not self._stop.wait(self._every_s):
            for queue_id in self._runner.subscriptions:
                self._runner.deliver(queue_id)


def answered(runner: Any, sent: tuple[int, Any, dict[str, str]], started: float, *, user: str) -> tuple[int, Any]:
    """The answer to a request: at once, or (202) read from its Location until it is there."""
    status, body, headers = sent
    with Deliveries(runner):
        while status == 202 and time.monotonic() - started < GIVE_UP_S:
            time.sleep(max(1.0, float(headers.get("retry-after", "1"))))
            status, body, headers = _request(runner, "GET", headers["location"], user=user)
    return status, body


def chat(runner: Any, fake: Any, user: str) -> dict[str, Any]:
    from benchmarks.real_speed.answers import chat_reply

    status, session, _ = _request(
        runner, "POST", "/ai-agent/sessions", {"context": {"processType": "中途採用"}}, user=user
    )
    assert status == 201, session
    # The same ~1,000-token answer for every call: the request's own, and the worker's when the
    # request's was cut and handed over (an empty script would answer a short sample instead).
    fake.enqueue(*[chat_reply() for _ in range(3)])
    started = time.monotonic()
    path = f"/ai-agent/sessions/{session['sessionId']}/messages"
    sent = _request(runner, "POST", path, {"message": "中途採用の段取りを作りたいです"}, user=user)
    first_status = sent[0]
    status, body = answered(runner, sent, started, user=user)
    waited = time.monotonic() - started
    answer = (body or {}).get("aiResponse") or {}
    by_model = status == 200 and not answer.get("fallback") and not answer.get("truncated")
    return {
        "status": first_status,
        "final": status,
        "by_model": by_model,
        "fallback": bool(answer.get("fallback")),
        "wait_s": waited,
        "outcome": answer.get("errorCode") or ("model" if by_model else f"http {status}"),
    }


def interview(runner: Any, fake: Any, user: str) -> dict[str, Any]:
    from benchmarks.real_speed.answers import JOB, interview_first_turn, interview_second_turn

    _request(runner, "POST", "/api/admin/jobs", JOB, user=user, admin=True)
    status, created, _ = _request(runner, "POST", "/interviews", {"jobId": JOB["jobId"]}, user=user)
    assert status == 201, created
    session = created["sessionId"]
    _request(
        runner,
        "POST",
        f"/interviews/{session}/consent",
        {"accepted": True, "noticeId": created["notice"]["noticeId"]},
        user=user,
    )
    fake.enqueue(*interview_first_turn())
    path = f"/interviews/{session}/messages"
    greeting = _request(runner, "POST", path, {"text": "こんにちは、応募しました。"}, user=user)
    answered(runner, greeting, time.monotonic(), user=user)  # the turn before is over, however it ended
    calls_before = len(fake.requests)
    fake.enqueue(*interview_second_turn())
    started = time.monotonic()
    sent = _request(runner, "POST", path, {"text": "日本語で。日本に住んでいます。"}, user=user)
    first_status = sent[0]
    status, body = answered(runner, sent, started, user=user)
    waited = time.monotonic() - started
    by_model = status == 200 and (body or {}).get("replyKind") == "question"
    outcome = "model" if by_model else ((body or {}).get("error") or {}).get("code") or (body or {}).get("replyKind")
    return {
        "status": first_status,
        "final": status,
        "by_model": by_model,
        "fallback": not by_model and status == 200,
        "wait_s": waited,
        "outcome": outcome or f"http {status}",
        "turn_calls": len(fake.requests) - calls_before,
    }


def generator(runner: Any, fake: Any, user: str) -> dict[str, Any]:
    from lambda_agents.nudges.profile import UserProfile

    from benchmarks.real_speed.answers import plan_reply
    from devtools.local_aws import put_profiles
    from devtools.runner_event_sources import sqs_event

    users = [f"{user}-{n}" for n in range(5)]
    today = datetime.now(UTC).date().isoformat()
    problems = ("staying_up_late", "procrastination", "anxiety")
    table = runner.aws.client("dynamodb")
    put_profiles(table, *(UserProfile(user_id=u, problems=problems, app_version="1.0.0") for u in users))
    for _ in users:
        fake.enqueue(plan_reply(), plan_reply())  # a second for a user whose first call is cut
    messages = [
        {
            "MessageId": f"m{n}",
            "ReceiptHandle": f"r{n}",
            "Body": json.dumps({"userId": u, "localDate": today}),
            "Attributes": {"ApproximateReceiveCount": "1"},
        }
        for n, u in enumerate(users)
    ]
    started = time.monotonic()
    result = runner.invoke("NudgeGeneratorFunction", sqs_event(messages, runner.queues["NudgeQueue"], runner.region))
    waited = time.monotonic() - started
    failed = {item["itemIdentifier"] for item in (result or {}).get("batchItemFailures", [])}
    rows = []
    for n, user_id in enumerate(users):
        item = table.query(
            TableName="SchedulesTable",
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": f"USER#{user_id}"}},
        ).get("Items", [])
        schedule = next((i for i in item if i["sk"]["S"].startswith("SCHEDULE#")), None)
        fallback = schedule is not None and schedule.get("fallbackUsed", {}).get("BOOL", False)
        reason = (schedule or {}).get("fallbackReason", {}).get("S")
        outcome = (
            "failed back to the queue" if f"m{n}" in failed else (reason or "model" if schedule else "no schedule")
        )
        rows.append(
            {
                "by_model": schedule is not None and not fallback,
                "fallback": fallback,
                "wait_s": waited,
                "outcome": outcome,
                "status": 0,
                "final": 0,
            }
        )
    return {"users": rows}


def deployed_template() -> dict[str, Any]:
    """The template, or (``BENCH_NO_HANDOVER``, ``NUDGE_BATCH_CONCURRENCY``) the deployment the
    baseline stands for: no worker to hand an answer to, the generator's users one at a time."""
    import copy

    from devtools.template import load_template

    template = copy.deepcopy(load_template())
    functions = template["Resources"]
    if os.environ.get("BENCH_NO_HANDOVER"):
        functions["ChatFunction"]["Properties"]["Environment"]["Variables"].pop("CHAT_ANSWERS_QUEUE_URL")
        functions["InterviewFunction"]["Properties"]["Environment"]["Variables"].pop("INTERVIEW_TURNS_QUEUE_URL")
    if os.environ.get("NUDGE_BATCH_CONCURRENCY"):
        variables = functions["NudgeGeneratorFunction"]["Properties"]["Environment"]["Variables"]
        variables["NUDGE_BATCH_CONCURRENCY"] = os.environ["NUDGE_BATCH_CONCURRENCY"]
    return template


def without_the_pace_check() -> None:
    """``BENCH_NO_PACE_CHECK``: the product as it was before an answer in the request was checked
    against its plan as it streamed (``llm.speeds.PaceForecast``): a late one runs to the deadline.
    An infinite tolerance never finds an answer late; the functions run in this process."""
    if os.environ.get("BENCH_NO_PACE_CHECK"):
        from lambda_agents.llm import speeds

        speeds.PACE_TOLERANCE = math.inf


def run(workload: str, profile_name: str, seed: int) -> dict[str, Any]:
    from devtools.fake_openai import PROFILES, FakeOpenAIServer
    from devtools.runner import LocalRunner

    without_the_pace_check()

    scenario: Callable[[Any, Any, str], dict[str, Any]] = {
        "chat": chat,
        "interview": interview,
        "generator": generator,
    }[workload]
    with FakeOpenAIServer(profile=PROFILES[profile_name], seed=seed) as fake:
        # As a developer's shell would hold them: the runner passes them to every function.
        os.environ.update({"AI_AGENT_MODE": "openai", "OPENAI_API_KEY": "bench", "OPENAI_BASE_URL": fake.base_url})
        with LocalRunner(deployed_template(), environ=dict(os.environ)) as runner:
            outcome = scenario(runner, fake, f"bench-{workload}-{seed}")
        time.sleep(0.2)  # the ledger's last records
        billed = [record for record in fake.billing]
    outcome["calls"] = len(billed)
    outcome["billed_completion"] = sum(record.completion_tokens for record in billed)
    outcome["billed_prompt"] = sum(record.prompt_tokens for record in billed)
    outcome["abandoned"] = sum(1 for record in billed if record.ended == "client_closed")
    return outcome


def main(argv: list[str] | None = None) -> None:
    import argparse

    from devtools.fake_openai import PROFILES

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.real_speed.user",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("workload", choices=WORKLOADS)
    parser.add_argument("profile", choices=sorted(PROFILES), help="the fake server's pace")
    parser.add_argument("seed", type=int, help="the fake server's seed")
    arguments = parser.parse_args(argv)
    workload, profile, seed = arguments.workload, arguments.profile, arguments.seed
    from devtools.runner import stdout_reserved_for_result

    with stdout_reserved_for_result() as out:
        result = run(workload, profile, seed)
        out.write(json.dumps(result) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
