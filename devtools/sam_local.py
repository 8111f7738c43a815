"""What `sam local invoke` / `sam local start-api` need beside Docker: an env file and an endpoint.

    python -m devtools.sam_local env-file [--endpoint URL]   # prints sam-local.env.json
    python -m devtools.sam_local env-file --stack NAME       # the same for a deployed stack's tables
    python -m devtools.sam_local endpoint [--port 8000]      # DynamoDB + SQS for sam local, on 127.0.0.1

Under sam local a table's ``!Ref`` is its logical ID and a queue's ``!Ref`` is not a URL at all,
and only variables the template declares can be set. The env file (``--env-vars``, named in
samconfig.toml) sets, for every function, the offline model, the local endpoints and the name of
every table and queue it uses on that endpoint. ``endpoint`` serves those tables and queues,
created from the template (keys, indexes, TTL, redrive), on a moto server; the local runner can
share it (``AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000 make serve``), as the names are the
same. A test keeps the committed env file equal to ``env-file``'s output.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import boto3

from .local_aws import ensure_queues, ensure_tables, serialised_moto_server
from .runner_template import LOCAL_ACCOUNT_ID, IntrinsicResolver, queue_name, queue_specs
from .template import ROOT, load_template, local_table_name, resources_of_type

DEFAULT_PORT = 8000
# sam local runs each function in a container on the host's network (samconfig.toml:
# docker_network = "host"), so the endpoint on the host's loopback is reachable from it.
DEFAULT_ENDPOINT = f"http://127.0.0.1:{DEFAULT_PORT}"
ENV_FILE = ROOT / "sam-local.env.json"
FOR_EVERY_FUNCTION = {"AI_AGENT_MODE": "mock", "POWERTOOLS_LOG_LEVEL": "INFO"}


def env_file_document(
    endpoint: str = DEFAULT_ENDPOINT,
    template: Mapping[str, Any] | None = None,
    deployed: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``--env-vars`` content: "Parameters" for every function, then each function's resource names.

    ``deployed`` (logical ID -> physical ID, from ``stack_resources``) names a deployed stack's
    tables and queues instead, with no local endpoint: sam local on the stack's own data.
    """
    template = template or load_template()
    resources = template["Resources"]
    services = ("DYNAMODB", "SQS", "EVENTBRIDGE")
    endpoints = {} if deployed else {f"AWS_ENDPOINT_URL_{service}": endpoint for service in services}
    document: dict[str, Any] = {"Parameters": {**FOR_EVERY_FUNCTION, **endpoints}}
    for logical_id, body in resources_of_type("AWS::Serverless::Function", dict(template)).items():
        names = {}
        for variable, value in (body["Properties"].get("Environment") or {}).get("Variables", {}).items():
            ref = str(value.get("Ref")) if isinstance(value, dict) else ""
            kind = resources.get(ref, {}).get("Type")
            if deployed and kind in {"AWS::DynamoDB::Table", "AWS::SQS::Queue"}:
                names[variable] = deployed[ref]  # a table's name, a queue's URL
            elif kind == "AWS::DynamoDB::Table":
                names[variable] = local_table_name(ref)
            elif kind == "AWS::SQS::Queue":
                name = queue_name(ref, resources[ref].get("Properties", {}))
                names[variable] = f"{endpoint}/{LOCAL_ACCOUNT_ID}/{name}"
        if names:
            document[logical_id] = names
    return document


def stack_resources(cloudformation: Any, stack_name: str) -> dict[str, str]:
    """Logical ID -> physical ID of a deployed stack's resources (a table's name, a queue's URL)."""
    found = {}
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack_name):
        for summary in page["StackResourceSummaries"]:
            if summary.get("PhysicalResourceId"):
                found[summary["LogicalResourceId"]] = summary["PhysicalResourceId"]
    return found


def serve_endpoint(port: int, template: dict[str, Any] | None = None) -> tuple[Any, str]:
    """A started moto server on 127.0.0.1:port holding the template's tables and queues."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    template = template or load_template()
    server = serialised_moto_server(port=port)  # DynamoDB atomic per request, as the real service
    server.start()
    host, bound = server.get_host_and_port()
    url = f"http://{host}:{bound}"
    keys = {"region_name": "us-east-1", "aws_access_key_id": "local", "aws_secret_access_key": "local"}
    ensure_tables(boto3.client("dynamodb", endpoint_url=url, **keys), template)
    resolver = IntrinsicResolver(template, region="us-east-1")
    ensure_queues(boto3.client("sqs", endpoint_url=url, **keys), queue_specs(template, resolver))
    return server, url


def _command_env_file(args: argparse.Namespace) -> int:
    deployed = stack_resources(boto3.client("cloudformation"), args.stack) if args.stack else None
    json.dump(env_file_document(args.endpoint, deployed=deployed), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def _command_endpoint(args: argparse.Namespace) -> int:
    server, url = serve_endpoint(args.port)
    tables = sorted(local_table_name(t) for t in resources_of_type("AWS::DynamoDB::Table"))
    print(f"[sam-local] DynamoDB and SQS on {url}: {len(tables)} tables ({', '.join(tables)})", file=sys.stderr)
    next_steps = "sam local start-api, or sam local invoke <Function> -e events/<file>; Ctrl-C stops"
    print(f"[sam-local] now: {next_steps}", file=sys.stderr)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.sam_local", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    env_file = commands.add_parser("env-file", help="print the --env-vars file for sam local")
    env_file.add_argument("--endpoint", default=DEFAULT_ENDPOINT)
    env_file.add_argument("--stack", help="name a deployed stack's tables and queues instead (AWS credentials)")
    env_file.set_defaults(run=_command_env_file)
    endpoint = commands.add_parser("endpoint", help="serve the template's tables and queues on 127.0.0.1")
    endpoint.add_argument("--port", type=int, default=DEFAULT_PORT)
    endpoint.set_defaults(run=_command_endpoint)
    args = parser.parse_args(argv)
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
