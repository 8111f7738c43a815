"""Asks the SAM CLI's own code what `sam local` would hand a function, without Docker.

Run with the SAM CLI's interpreter (.tools/sam/bin/python); prints JSON on stdout.

    sam_local_probe.py env <template> <env-vars file> [--parameter NAME=VALUE ...]
        {LogicalId: environment}: what `sam local invoke|start-api --env-vars <file>
        [--parameter-overrides ...]` sets in each function's container (the template's variables,
        then the shell's, then the file's, and the AWS_* variables SAM adds, AWS_SAM_LOCAL
        included), with the template's AWS::LanguageExtensions expanded or not as samconfig.toml
        (next to the template, else the repository's) and SAM_CLI_ENABLE_LANGUAGE_EXTENSIONS tell
        `sam local invoke`
    sam_local_probe.py expand <template> [--parameter NAME=VALUE ...]
        the template as the SAM CLI expands it for `sam local` (samconfig.toml's setting, as above)
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

REPOSITORY = Path(__file__).resolve().parents[3]


def _language_extensions(template: Path) -> bool:
    """What `sam local invoke` decides: --language-extensions from samconfig.toml's default
    environment (its global section included), else the environment variable."""
    from samcli.lib.cfn_language_extensions.sam_integration import resolve_language_extensions_enabled
    from samcli.lib.config.samconfig import SamConfig

    folder = template.parent if (template.parent / "samconfig.toml").exists() else REPOSITORY
    setting = SamConfig(str(folder)).get_all(["local", "invoke"], "parameters").get("language_extensions")
    return resolve_language_extensions_enabled(setting)


def _stacks(template: Path, parameters: dict[str, str]) -> list[object]:
    from samcli.lib.providers.sam_stack_provider import SamLocalStackProvider

    region = os.environ.get("AWS_DEFAULT_REGION", "us-east-1")
    stacks, _ = SamLocalStackProvider.get_stacks(
        str(template),
        parameter_overrides=parameters,
        global_parameter_overrides={"AWS::Region": region},
        language_extensions_enabled=_language_extensions(template),
    )
    return stacks  # type: ignore[no-any-return]


def _expanded(template: Path, parameters: dict[str, str]) -> dict[str, object]:
    (root,) = [stack for stack in _stacks(template, parameters) if stack.is_root_stack]  # type: ignore[attr-defined]
    return root.template_dict  # type: ignore[attr-defined,no-any-return]


def _environments(template: Path, env_file: Path, parameters: dict[str, str]) -> dict[str, dict[str, str]]:
    from samcli.commands.local.lib.local_lambda import LocalLambdaRunner
    from samcli.lib.providers.sam_function_provider import SamFunctionProvider

    region = os.environ.get("AWS_DEFAULT_REGION", "us-east-1")
    provider = SamFunctionProvider(_stacks(template, parameters))
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
    env.add_argument("--parameter", action="append", default=[])
    event = commands.add_parser("event")
    event.add_argument("method")
    event.add_argument("resource")
    event.add_argument("path")
    event.add_argument("--header", action="append", default=[])
    event.add_argument("--body")
    expand = commands.add_parser("expand")
    expand.add_argument("template", type=Path)
    expand.add_argument("--parameter", action="append", default=[])
    args = parser.parse_args()
    parameters = dict(item.split("=", 1) for item in getattr(args, "parameter", []))
    if args.command == "env":
        result: object = _environments(args.template.resolve(), args.env_file.resolve(), parameters)
    elif args.command == "expand":
        result = _expanded(args.template.resolve(), parameters)
    else:
        result = _event(args.method, args.resource, args.path, args.header, args.body)
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
