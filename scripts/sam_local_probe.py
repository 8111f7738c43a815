"""Asks the SAM CLI's own code what `sam local` would hand a function, without Docker.

Run with the SAM CLI's interpreter (.tools/sam/bin/python); prints JSON on stdout.

    sam_local_probe.py env <template> <env-vars file>
        {LogicalId: environment}: what `sam local invoke|start-api --env-vars <file>` sets in each
        function's container (the template's variables, then the shell's, then the file's, and
        the AWS_* variables SAM adds, AWS_SAM_LOCAL included)
    sam_local_probe.py event <METHOD> <resource path> <request path> [--header NAME:VALUE ...] [--body TEXT]
        the REST (v1) proxy event `sam local start-api` builds for that request

The tests use it to check sam-local.env.json and the sam local identity switch against the
tool itself rather than against a description of it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path


def _environments(template: Path, env_file: Path) -> dict[str, dict[str, str]]:
    from samcli.commands.local.lib.local_lambda import LocalLambdaRunner
    from samcli.lib.providers.sam_function_provider import SamFunctionProvider
    from samcli.lib.providers.sam_stack_provider import SamLocalStackProvider

    region = os.environ.get("AWS_DEFAULT_REGION", "us-east-1")
    stacks, _ = SamLocalStackProvider.get_stacks(str(template), global_parameter_overrides={"AWS::Region": region})
    provider = SamFunctionProvider(stacks)
    runner = LocalLambdaRunner(
        local_runtime=None,  # type: ignore[arg-type]  # never invoked: only the environment is asked for
        function_provider=provider,
        cwd=str(template.parent),
        real_path=str(template.parent),
        aws_region=region,
        env_vars_values=json.loads(env_file.read_text(encoding="utf-8")),
    )
    return {function.name: runner._make_env_vars(function).resolve() for function in provider.get_all()}


def _event(method: str, resource: str, path: str, headers: list[str], body: str | None) -> dict[str, object]:
    from flask import Flask, request
    from samcli.local.apigw.event_constructor import construct_v1_event
    from samcli.local.apigw.path_converter import PathConverter

    app = Flask("sam-local-probe")
    rule = PathConverter.convert_path_to_flask(resource)
    app.add_url_rule(rule, endpoint=rule, view_func=lambda **_: "", methods=[method])
    header_pairs = dict(header.split(":", 1) for header in headers)
    with app.test_request_context(path, method=method, headers=header_pairs, data=body or None):
        return construct_v1_event(request, 3000, binary_types=[], stage_name="Prod")  # type: ignore[no-any-return]


def main() -> int:
    logging.disable(logging.CRITICAL)
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    env = commands.add_parser("env")
    env.add_argument("template", type=Path)
    env.add_argument("env_file", type=Path)
    event = commands.add_parser("event")
    event.add_argument("method")
    event.add_argument("resource")
    event.add_argument("path")
    event.add_argument("--header", action="append", default=[])
    event.add_argument("--body")
    args = parser.parse_args()
    if args.command == "env":
        result: object = _environments(args.template.resolve(), args.env_file.resolve())
    else:
        result = _event(args.method, args.resource, args.path, args.header, args.body)
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
