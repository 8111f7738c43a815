"""One local Lambda container: a process of its own that imports one function's handler once
(its cold start) and then runs one invocation at a time, as a Lambda execution environment does.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from .runner_lambda import import_handler_from, lambda_context
from .runner_template import FunctionSpec
from .template import ROOT

PRELOAD = "RUNNER_CONTAINER_PRELOAD"


def serve(spec: FunctionSpec, region: str, protocol: Any, root: Path = ROOT) -> None:
    handler = import_handler_from(root)(spec)
    preload = os.environ.get(PRELOAD)
    if preload:
        module, _, function = preload.partition(":")
        getattr(importlib.import_module(module), function)()
    for line in sys.stdin:
        if not line.strip():
            continue
        event = json.loads(line)
        started = time.monotonic()
        try:
            result: dict[str, Any] = {"result": handler(event, lambda_context(spec, region))}
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            result = {"error": {"errorType": type(exc).__name__, "errorMessage": str(exc)}}
        elapsed = time.monotonic() - started
        if elapsed > spec.timeout_s:
            result = {"error": {"errorType": "Sandbox.Timedout", "errorMessage": f"after {spec.timeout_s} s"}}
        result.update(pid=os.getpid(), started=started, ended=time.monotonic())
        protocol.write(json.dumps(result, default=str) + "\n")
        protocol.flush()


def main() -> None:
    spec = FunctionSpec(**json.loads(sys.argv[1]))
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # the handler's prints: logs, not protocol
    sys.stdout = sys.stderr
    serve(spec, sys.argv[2], protocol, Path(sys.argv[3]) if len(sys.argv) > 3 else ROOT)


if __name__ == "__main__":
    main()
