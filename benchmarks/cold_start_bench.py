"""Cold import time of every handler module against a Powertools skeleton handler's.

How it works, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from typing import Any

from benchmarks.command_line import benchmark_arguments
from devtools.runner_template import IntrinsicResolver, function_environment, queue_specs
from devtools.template import ROOT, load_template, resources_of_type

RUNS = 7
GOAL = 1.3
REGION = "us-east-1"
SKELETON = (
    "import boto3\nfrom pydantic import BaseModel\nfrom aws_lambda_powertools import Logger, Metrics\n"
    "from aws_lambda_powertools.event_handler import APIGatewayRestResolver\n"
    "from aws_lambda_powertools.utilities.batch import BatchProcessor\n"
    "APIGatewayRestResolver(enable_validation=True)\n"
    "class Settings(BaseModel):\n    table: str"
)
TRACING_SDKS = ("aws_xray_sdk", "opentelemetry")
_PROBE = (
    "import sys, time\n"
    "t, c = time.perf_counter(), time.process_time()\n"
    "{statement}\n"
    "wall, cpu = time.perf_counter() - t, time.process_time() - c\n"
    "tops = sorted({{name.split('.')[0] for name in sys.modules}})\n"
    "import json; print(json.dumps({{'wall': wall, 'cpu': cpu, 'modules': tops}}))\n"
)


def handler_module(body: dict[str, Any]) -> str:
    code_uri = str(body["Properties"]["CodeUri"]).strip("/")
    return code_uri.replace("/", ".") + ".app"


def base_environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{ROOT / 'layers/common/python'}:{ROOT}", "AWS_DEFAULT_REGION": REGION}


def function_environments() -> dict[str, dict[str, str]]:
    """Each function's variables from the template, resolved the way the local runner does."""
    template = load_template()
    queues = queue_specs(template, IntrinsicResolver(template, region=REGION, queue_urls={}))
    urls = {name: f"http://127.0.0.1:9/000000000000/{spec.name}" for name, spec in queues.items()}
    resolver = IntrinsicResolver(template, region=REGION, queue_urls=urls)
    return {
        name: {**base_environment(), **function_environment(template, name, resolver), "AI_AGENT_MODE": "mock"}
        for name in resources_of_type("AWS::Serverless::Function")
    }


def probe(statement: str, env: dict[str, str]) -> tuple[float, float, set[str]]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE.format(statement=statement)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=True,
    )
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return float(data["cpu"]), float(data["wall"]), set(data["modules"])


def main() -> None:
    environments = function_environments()
    statements = {"skeleton": SKELETON, "import openai (for scale)": "import openai"}
    envs = {name: base_environment() for name in statements}
    for name, body in resources_of_type("AWS::Serverless::Function").items():
        module = handler_module(body)
        if (ROOT / module.replace(".", "/")).with_suffix(".py").exists():
            statements[name], envs[name] = f"import {module}", environments[name]
    cpu: dict[str, list[float]] = {name: [] for name in statements}
    wall: dict[str, list[float]] = {name: [] for name in statements}
    loaded: dict[str, set[str]] = {name: set() for name in statements}
    for _ in range(RUNS):  # in turns: load on the machine affects every module alike
        for name, statement in statements.items():
            cpu_s, wall_s, modules = probe(statement, envs[name])
            cpu[name].append(cpu_s)
            wall[name].append(wall_s)
            loaded[name] |= modules
    skeleton = statistics.median(cpu["skeleton"])
    print(f"cold import, median of {RUNS} fresh processes (taken in turns); the skeleton imports:")
    print("  " + SKELETON.replace("\n", "; "))
    print(f"goal: every function imports in at most {GOAL}x the skeleton (CPU seconds)")
    print(f"{'module':<38}{'cpu s':>7}{'x skeleton':>12}{'wall s':>8}  {'openai':<7}{'tracing SDK':<12}goal")
    for name in statements:
        seconds = statistics.median(cpu[name])
        ratio = seconds / skeleton
        tracing = ", ".join(sdk for sdk in TRACING_SDKS if sdk in loaded[name]) or "none"
        goal = "-" if name in ("skeleton", "import openai (for scale)") else ("met" if ratio <= GOAL else "MISSED")
        openai = "yes" if "openai" in loaded[name] else "no"
        print(
            f"{name:<38}{seconds:>7.3f}{ratio:>12.2f}{statistics.median(wall[name]):>8.3f}  "
            f"{openai:<7}{tracing:<12}{goal}"
        )


if __name__ == "__main__":
    benchmark_arguments(__file__, __doc__)
    main()
