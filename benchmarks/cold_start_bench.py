"""Cold import time of every handler module against ``import boto3, pydantic, aws_lambda_powertools``.

Each figure is the median of fresh interpreter processes (what a Lambda cold start pays for
imports). The table also shows whether the handler pulled in openai: a function that does not
call an LLM must not (it costs ~1 s of cold start on a small Lambda).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from devtools.template import ROOT, resources_of_type

RUNS = 5
BASELINE = "import boto3, pydantic, aws_lambda_powertools"
_PROBE = (
    "import sys, time\n"
    "t = time.perf_counter()\n"
    "{statement}\n"
    "elapsed = time.perf_counter() - t\n"
    "import json; print(json.dumps({{'s': elapsed, 'openai': 'openai' in sys.modules}}))\n"
)


def handler_module(body: dict[str, object]) -> str:
    code_uri = str(body["Properties"]["CodeUri"]).strip("/")  # type: ignore[index]
    return code_uri.replace("/", ".") + ".app"


def measure(statement: str, env: dict[str, str]) -> tuple[float, bool]:
    samples, pulled_openai = [], False
    for _ in range(RUNS):
        out = subprocess.run(
            [sys.executable, "-c", _PROBE.format(statement=statement)],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            check=True,
        )
        data = json.loads(out.stdout.strip().splitlines()[-1])
        samples.append(float(data["s"]))
        pulled_openai = pulled_openai or bool(data["openai"])
    return statistics.median(samples), pulled_openai


def main() -> None:
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'layers/common/python'}:{ROOT}",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "AI_AGENT_MODE": "mock",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    functions = resources_of_type("AWS::Serverless::Function")
    for body in functions.values():
        for key, value in (body["Properties"].get("Environment", {}).get("Variables", {})).items():
            if isinstance(value, str):
                env.setdefault(key, value)
            else:
                env.setdefault(key, "LocalTable")
    baseline, _ = measure(BASELINE, env)
    openai_alone, _ = measure("import openai", env)
    print(f"cold import, median of {RUNS} fresh processes; baseline = `{BASELINE}`")
    print(f"{'module':<38}{'seconds':>9}{'x baseline':>12}  openai imported")
    print(f"{'baseline':<38}{baseline:>9.3f}{1.0:>12.2f}  -")
    print(f"{'import openai (for scale)':<38}{openai_alone:>9.3f}{openai_alone / baseline:>12.2f}  yes")
    for logical_id, body in functions.items():
        module = handler_module(body)
        if not (ROOT / module.replace(".", "/")).with_suffix(".py").exists():
            print(f"{logical_id:<38}{'(no handler yet)':>21}")
            continue
        seconds, pulled = measure(f"import {module}", env)
        print(f"{logical_id:<38}{seconds:>9.3f}{seconds / baseline:>12.2f}  {'yes' if pulled else 'no'}")


if __name__ == "__main__":
    main()
