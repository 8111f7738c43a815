"""Cold import time of every handler module against ``import boto3, pydantic, aws_lambda_powertools``.

Each figure is the median of fresh interpreter processes (what a Lambda cold start pays for
imports), each run in its function's own environment from the template (tracing off, the
template's default). The baseline and the handlers are measured in turns, run after run, so a
busy machine slows them alike and the ratio holds where the seconds do not. The table also says
whether the handler pulled in openai (a function that calls no LLM must not, ~1 s) or any
tracing SDK (none may at cold start: the X-Ray SDK is gone and OpenTelemetry is imported only
on a model call with tracing on). Goal: a function that calls no LLM imports in at most 1.2x the
baseline.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from typing import Any

from devtools.runner_template import IntrinsicResolver, function_environment, queue_specs
from devtools.template import ROOT, load_template, resources_of_type

RUNS = 7
GOAL = 1.2
BASELINE = "import boto3, pydantic, aws_lambda_powertools"
TRACING_SDKS = ("aws_xray_sdk", "opentelemetry")
_PROBE = (
    "import sys, time\n"
    "t = time.perf_counter()\n"
    "{statement}\n"
    "elapsed = time.perf_counter() - t\n"
    "import json; print(json.dumps({{'s': elapsed, 'modules': sorted(m.split('.')[0] for m in sys.modules)}}))\n"
)


def handler_module(body: dict[str, Any]) -> str:
    code_uri = str(body["Properties"]["CodeUri"]).strip("/")
    return code_uri.replace("/", ".") + ".app"


def calls_an_llm(body: dict[str, Any]) -> bool:
    """A function that may read the OpenAI key is one that calls a model."""
    return "OpenAIApiKeyParameterName" in json.dumps(body["Properties"].get("Policies", []))


REGION = "us-east-1"


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


def probe(statement: str, env: dict[str, str]) -> tuple[float, set[str]]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE.format(statement=statement)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=True,
    )
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return float(data["s"]), set(data["modules"])


def main() -> None:
    functions = resources_of_type("AWS::Serverless::Function")
    environments = function_environments()
    statements = {"baseline": BASELINE, "import openai (for scale)": "import openai"}
    envs = {name: base_environment() for name in statements}
    for name, body in functions.items():
        module = handler_module(body)
        if (ROOT / module.replace(".", "/")).with_suffix(".py").exists():
            statements[name] = f"import {module}"
            envs[name] = environments[name]
    samples: dict[str, list[float]] = {name: [] for name in statements}
    loaded: dict[str, set[str]] = {name: set() for name in statements}
    for _ in range(RUNS):  # in turns: load on the machine affects every module alike
        for name, statement in statements.items():
            seconds, modules = probe(statement, envs[name])
            samples[name].append(seconds)
            loaded[name] |= modules
    baseline = statistics.median(samples["baseline"])
    print(f"cold import, median of {RUNS} fresh processes (taken in turns); baseline = `{BASELINE}`")
    print(f"goal: a function that calls no LLM imports in at most {GOAL}x the baseline")
    print(f"{'module':<30}{'seconds':>9}{'x baseline':>12}  {'openai':<7}{'tracing SDK':<13}goal")
    for name in statements:
        seconds = statistics.median(samples[name])
        ratio = seconds / baseline
        tracing = ", ".join(sdk for sdk in TRACING_SDKS if sdk in loaded[name]) or "none"
        goal = "-"
        if name in functions and not calls_an_llm(functions[name]):
            goal = "met" if ratio <= GOAL else "MISSED"
        openai = "yes" if "openai" in loaded[name] else "no"
        print(f"{name:<30}{seconds:>9.3f}{ratio:>12.2f}  {openai:<7}{tracing:<13}{goal}")


if __name__ == "__main__":
    main()
