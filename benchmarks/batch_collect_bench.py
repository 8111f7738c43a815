"""Peak memory of collecting a finished batch job of 50,000 plans of ~3,000 tokens in a 512 MB function.

How it runs, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from typing import Any

os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Bench")
os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from benchmarks.command_line import benchmark_arguments
from devtools.template import ROOT

REQUESTS = 50_000
PLAN_TOKENS = 3_000
LAMBDA_MB = 512
WORKERS = 8  # PlanBatches' default
MODEL = "gpt-4o"


def plan(user: int) -> str:
    """A plan-shaped JSON answer of about PLAN_TOKENS tokens (the fake counts 4 bytes a token)."""
    nudge = {
        "slotIndex": 0,
        "hook": "Put the phone down and breathe for a minute",
        "content": "A short walk before bed helps the evening settle. " * 6,
        "tone": "gentle",
        "enabled": True,
        "reasoning": "Evenings are when the late scrolling starts, so the nudge comes before it. " * 2,
    }
    body = {"rootCauseHypothesis": f"user {user}", "overallStrategy": "s", "appNudges": []}
    while len(json.dumps(body)) < PLAN_TOKENS * 4:
        body["appNudges"].append({**nudge, "slotIndex": len(body["appNudges"])})
    return json.dumps(body)


def finished_job() -> tuple[Any, str, int]:
    """The fake server (started, to be stopped by the caller), a completed job's id, its output's bytes."""
    from lambda_agents.llm import ChatRequest
    from lambda_agents.llm.batches import BatchItem
    from lambda_agents.llm.openai_batches import OpenAIBatchModel

    from devtools.fake_openai import BatchScript, FakeOpenAIServer, Reply

    server = FakeOpenAIServer(time_scale=0.001).start()
    ids = [f"user-{n:05d}" for n in range(REQUESTS)]
    server.batches.script_next(
        BatchScript(answers={custom_id: Reply(content=plan(n)) for n, custom_id in enumerate(ids)})
    )
    request = ChatRequest(messages=[{"role": "user", "content": "plan my day"}], max_tokens=4_000)
    model = OpenAIBatchModel("k", MODEL, server.base_url)
    job = model.submit([BatchItem(custom_id, request) for custom_id in ids], {"cohort": "bench"})
    while not model.status(job.batch_id).finished:
        time.sleep(0.05)
    output = server.batches.file(str(server.batches.jobs[job.batch_id].output_file_id))
    return server, job.batch_id, len(output.data) if output is not None else 0


def collect(way: str, base_url: str, batch_id: str) -> dict[str, float]:
    """One way of collecting, in this (fresh) process: what it added to the peak, and its seconds."""
    from concurrent.futures import ThreadPoolExecutor

    import openai
    from lambda_agents.llm.openai_batches import OpenAIBatchModel, _answer
    from lambda_agents.nudges.batch_answers import AnswerReader
    from lambda_agents.nudges.generation import GenerationOutcome

    class KeepNothing:
        """The generator's store, without DynamoDB: takes each answer and keeps nothing."""

        def store_batch_answer(self, job: Any, response: Any) -> GenerationOutcome:
            return GenerationOutcome(job.userId, job.localDate, "generated")

    model = OpenAIBatchModel("k", MODEL, base_url)
    before = _peak_kb()
    started = time.perf_counter()
    stored = 0
    if way == "whole":
        client = openai.OpenAI(api_key="k", base_url=base_url, max_retries=0, timeout=60.0)
        job = client.batches.retrieve(batch_id)
        answers = []
        for file_id in (job.output_file_id, job.error_file_id):
            if file_id:
                text = client.files.content(file_id).text
                answers.extend(_answer(line, MODEL) for line in text.splitlines() if line.strip())
        keep_nothing = KeepNothing()
        with ThreadPoolExecutor(WORKERS) as pool:
            stored = sum(
                1
                for outcome in pool.map(
                    lambda answer: keep_nothing.store_batch_answer(batch_job(answer), None), answers
                )
                if outcome.status == "generated"
            )
    else:
        # The bench's job was sent with user ids for custom_id (as jobs sent before request ids).
        reader = AnswerReader(KeepNothing().store_batch_answer, WORKERS)  # type: ignore[arg-type]
        read = reader.read(
            model.answers(batch_id),
            job=batch_id,
            local_date="2026-02-02",
            claim=None,
            signed=False,
            time_left_s=lambda: float("inf"),
        )
        stored = read.outcomes["generated"]
    seconds = time.perf_counter() - started
    return {
        "peak_mb": _peak_kb() / 1024,
        "added_mb": (_peak_kb() - before) / 1024,
        "seconds": seconds,
        "stored": stored,
    }


def batch_job(answer: Any) -> Any:
    from lambda_agents.nudges.generation import GenerationJob

    return GenerationJob(userId=answer.custom_id, localDate="2026-02-02")


def _peak_kb() -> int:
    """This process's peak resident memory in KB: Linux's VmHWM, which starts afresh with the new
    program (``ru_maxrss`` of a child started from a large parent can carry the parent's peak)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)  # KB on Linux, bytes on macOS


def in_fresh_process(way: str, base_url: str, batch_id: str) -> dict[str, float]:
    environment = {**os.environ, "PYTHONPATH": f"{ROOT / 'layers' / 'common' / 'python'}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.batch_collect_bench", "--collect", way, base_url, batch_id],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env=environment,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    started = time.perf_counter()
    server, batch_id, output_bytes = finished_job()
    try:
        made_s = time.perf_counter() - started
        print(
            f"a finished job of {REQUESTS:,} plans of ~{PLAN_TOKENS:,} tokens: output file {output_bytes / 1e6:,.0f} MB"
            f" (made on the fake server in {made_s:.0f} s); NudgeBatchFunction has {LAMBDA_MB} MB"
        )
        header = f"{'way of collecting':<28}{'peak RSS MB':>12}{'added MB':>10}{'seconds':>9}{'stored':>8}"
        print(f"{header}  fits {LAMBDA_MB} MB")
        for way, label in (("whole", "whole file (before)"), ("streamed", "streamed (now)")):
            figures = in_fresh_process(way, server.base_url, batch_id)
            fits = "yes" if figures["peak_mb"] < LAMBDA_MB else "NO"
            print(
                f"{label:<28}{figures['peak_mb']:>12.0f}{figures['added_mb']:>10.0f}{figures['seconds']:>9.1f}"
                f"{int(figures['stored']):>8}  {fits}"
            )
    finally:
        server.stop()


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--collect":  # the helper process main() starts
        print(json.dumps(collect(sys.argv[2], sys.argv[3], sys.argv[4])))
    else:
        benchmark_arguments(__file__, __doc__)
        main()
