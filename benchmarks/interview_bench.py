"""Interview agents (docs/interview.md): what a turn costs besides the model.

How it runs, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections import Counter
from typing import Any

from lambda_agents.interview.agents.loop import AgentEnv
from lambda_agents.interview.agents.offline import RESPONDERS
from lambda_agents.interview.agents.orchestrator import Orchestrator, prompt_history
from lambda_agents.interview.agents.reviewers import SubAgents
from lambda_agents.interview.interview_log import RecordingLog
from lambda_agents.interview.rules.models import ChatMessage
from lambda_agents.interview.rules.run_steps import InMemoryRunSteps
from lambda_agents.interview.service import InterviewService
from lambda_agents.llm.offline_model import OfflineModel
from lambda_agents.llm.types import estimate_tokens

from benchmarks.command_line import benchmark_arguments
from benchmarks.interview_job import JOB, MemoryRepository
from devtools.demo_sections.interview import SCRIPT  # the same scripted applicant as `make demo`

ANSWER = "東京のカフェ森で5年間バリスタをしていました。毎朝の仕込みから閉店作業まで担当していました。"
QUESTION = "ありがとうございます。勤務先ではどのようなお仕事を担当されていましたか？"
TOOL_RESULT = json.dumps({"status": "success", "result": {"message": "Reviewer passed experience. Next: motivation."}})


def _tokens(messages: list[dict[str, Any]]) -> int:
    return estimate_tokens(json.dumps(messages, ensure_ascii=False))


def prompt_growth() -> None:
    print("1. Interviewer prompt history as the interview grows (estimated tokens, system prompt aside)")
    print(f"{'turns':>6}{'windowed (this product)':>26}{'every message kept':>22}{'ratio':>8}")
    for turns in (5, 20, 50, 100):
        stored: list[ChatMessage] = []
        everything: list[dict[str, Any]] = []
        for turn in range(turns):
            stored.append(ChatMessage(seq=2 * turn, role="user", content=ANSWER, created_at="t"))
            stored.append(ChatMessage(seq=2 * turn + 1, role="assistant", content=QUESTION, created_at="t"))
            # what a loop that keeps everything appends per turn: the answer, three tool calls and results
            everything.append({"role": "user", "content": ANSWER})
            for arguments in (
                {"agent": "reviewer", "question": None, "facts": [{"name": "勤務先", "value": ANSWER}]},
                {"agent": "quick_check", "question": QUESTION, "facts": None},
                {"message": QUESTION},
            ):
                call = {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "subtask", "arguments": json.dumps(arguments, ensure_ascii=False)},
                }
                everything.append({"role": "assistant", "content": None, "tool_calls": [call]})
                everything.append(
                    {
                        "role": "tool",
                        "tool_call_id": "call_1",
                        "content": TOOL_RESULT,
                    }
                )
        windowed = _tokens(prompt_history(stored, ANSWER))
        full = _tokens([*everything, {"role": "user", "content": ANSWER}])
        print(f"{turns:>6}{windowed:>26}{full:>22}{full / windowed:>8.1f}")


def _service(model: OfflineModel, repository: Any, run_steps: Any) -> InterviewService:
    env = AgentEnv(model, run_steps, RecordingLog(), SubAgents(model, sleep=lambda _: None), sleep=lambda _: None)
    return InterviewService(repository, Orchestrator(env))


def _interview(service: InterviewService) -> None:
    session = service.create("bench-user", JOB)
    service.consent("bench-user", session.session_id, service.notice(session).notice_id)
    for line in SCRIPT:
        service.post_message("bench-user", session.session_id, line)


def calls_per_interview() -> None:
    model = OfflineModel(RESPONDERS)
    _interview(_service(model, MemoryRepository(), InMemoryRunSteps()))
    counts = Counter(request.purpose.removeprefix("interview.") for request in model.calls)
    print(f"\n2. Model calls in one offline interview ({len(JOB.fields)} fields, {len(SCRIPT)} applicant turns)")
    for purpose in ("greeter", "architect", "interviewer", "quick_check", "reviewer", "auditor"):
        print(f"  {purpose:<12}{counts[purpose]:>4}")
    agents = counts["greeter"] + counts["architect"] + counts["interviewer"]
    subagents = counts["quick_check"] + counts["reviewer"] + counts["auditor"]
    print(f"  {'total':<12}{len(model.calls):>4}  ({agents} agent-loop calls, {subagents} sub-agent sessions)")


def _time_turns(make_service: Any, rounds: int) -> list[float]:
    per_turn: list[float] = []
    for _ in range(rounds):
        service = make_service()
        started = time.perf_counter()
        _interview(service)
        per_turn.append((time.perf_counter() - started) / len(SCRIPT) * 1000)
    return per_turn


def turn_overhead() -> None:
    import boto3
    from lambda_agents.storage.dynamodb import dynamodb_resource
    from lambda_agents.storage.interviews import DynamoInterviewRepository
    from lambda_agents.storage.run_steps import DynamoRunStepRecorder
    from moto import mock_aws

    from devtools.template import create_tables

    for name, value in {
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
    }.items():
        os.environ.setdefault(name, value)
    os.environ.pop("AWS_ENDPOINT_URL_DYNAMODB", None)
    rounds = 5
    memory = _time_turns(lambda: _service(OfflineModel(RESPONDERS), MemoryRepository(), InMemoryRunSteps()), rounds)
    with mock_aws():
        dynamodb_resource.cache_clear()
        create_tables(boto3.client("dynamodb", region_name="us-east-1"), ["InterviewsTable"])
        from lambda_agents.interview.catalog.jobs import JobDraft, JobService
        from lambda_agents.storage.jobs import DynamoJobRepository

        JobService(DynamoJobRepository("InterviewsTable")).create(
            JobDraft(title="bench", fields=JOB.fields), "bench", "bench"
        )
        requests: Counter[str] = Counter()
        dynamodb_resource().meta.client.meta.events.register(
            "before-call.dynamodb.*", lambda model, **_: requests.update([model.name])
        )
        moto = _time_turns(
            lambda: _service(
                OfflineModel(RESPONDERS),
                DynamoInterviewRepository("InterviewsTable"),
                DynamoRunStepRecorder("InterviewsTable"),
            ),
            rounds,
        )
        per_turn = Counter(requests)
        withdrawal = _withdrawal_cost(requests)
        dynamodb_resource.cache_clear()
    turns = rounds * len(SCRIPT)
    print(f"\n3. Milliseconds per applicant turn outside the model (offline model, median of {rounds} interviews)")
    print(f"  {'in-memory repository (orchestrator, reducer, prompts)':<58}{statistics.median(memory):>8.1f}")
    print(f"  {'DynamoDB on moto (transaction + RunSteps)':<58}{statistics.median(moto):>8.1f}")
    print(
        "  DynamoDB requests per turn: "
        + ", ".join(f"{name} {count / turns:.1f}" for name, count in sorted(per_turn.items()))
    )
    deleted, calls = withdrawal
    print(f"\n4. Withdrawing one finished interview ({len(SCRIPT)} turns): every item of it deleted, the head last")
    print(f"  items deleted: {deleted}; DynamoDB requests: " + ", ".join(f"{n} {c}" for n, c in sorted(calls.items())))


def _withdrawal_cost(requests: Counter[str]) -> tuple[int, Counter[str]]:
    """Items deleted and requests made by one withdrawal (messages, RunSteps, job snapshot, head)."""
    import boto3
    from lambda_agents.storage.interviews import DynamoInterviewRepository
    from lambda_agents.storage.run_steps import DynamoRunStepRecorder

    service = _service(
        OfflineModel(RESPONDERS), DynamoInterviewRepository("InterviewsTable"), DynamoRunStepRecorder("InterviewsTable")
    )
    _interview(service)
    client = boto3.client("dynamodb", region_name="us-east-1")
    before = client.scan(TableName="InterviewsTable", Select="COUNT")["Count"]
    session_id = next(
        item["sessionId"]["S"]
        for item in client.scan(TableName="InterviewsTable")["Items"]
        if item["sk"]["S"] == "SESSION" and item["status"]["S"] == "completed" and "withdrawnAt" not in item
    )
    requests.clear()
    service.withdraw("bench-user", session_id)
    after = client.scan(TableName="InterviewsTable", Select="COUNT")["Count"]
    return before - after, Counter(requests)


def main() -> None:
    from lambda_agents.observability import logger

    previous = logger.log_level
    logger.setLevel("WARNING")  # the engine logs every call at INFO: keep the report to the tables
    try:
        prompt_growth()
        calls_per_interview()
        turn_overhead()
        answer_turn_on_screen()
    finally:
        logger.setLevel(previous)


def answer_turn_on_screen(rounds: int = 3) -> None:
    """5. One answer turn (the Reviewer, then the next question) through the real openai client
    against the fake at 60 tokens/s, the question written twice (the old call sequence) and once."""
    from benchmarks.interview_live import ROUNDS_NOTE, measure_answer_turn

    rows = [measure_answer_turn(twice=twice, rounds=rounds) for twice in (True, False)]
    print(f"\n5. An answer turn on the applicant's screen: {ROUNDS_NOTE.format(rounds=rounds)}")
    print(
        f"  {'the question':<40}{'calls':>6}{'prompt tok':>12}{'output tok':>12}"
        f"{'1st progress':>14}{'1st words':>11}{'done':>8}"
    )
    for row in rows:
        progress = "-" if row.first_progress_s is None else f"{row.first_progress_s:.3f} s"
        print(
            f"  {row.label:<40}{row.calls:>6}{row.prompt_tokens:>12,}{row.completion_tokens:>12,}"
            f"{progress:>14}{row.first_words_s:>9.2f} s{row.done_s:>6.2f} s"
        )
    twice, once = rows
    saved = 1 - (once.prompt_tokens + once.completion_tokens) / (twice.prompt_tokens + twice.completion_tokens)
    print(
        f"  written once: {twice.calls - once.calls} call and {saved:.0%} of the turn's tokens fewer; the first words "
        f"{twice.first_words_s - once.first_words_s:.2f} s sooner, the first progress frame "
        f"{once.first_progress_s or 0:.3f} s after the answer"
    )


if __name__ == "__main__":
    benchmark_arguments(__file__, __doc__)
    main()
