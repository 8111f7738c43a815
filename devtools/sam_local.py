"""What `sam local invoke` / `sam local start-api` need beside Docker: an env file and an endpoint.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import logging
import os
import signal
import socket
import struct
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import boto3

from .local_aws import ensure_queues, ensure_tables, serialised_moto_app, serialised_moto_server
from .runner_template import LOCAL_ACCOUNT_ID, IntrinsicResolver, queue_name, queue_specs
from .template import ROOT, load_template, local_table_name, resources_of_type

DEFAULT_PORT = 8000
# The host as sam local's containers name it (samconfig.toml's add_host on Linux, built into
# Docker Desktop): the SAM CLI runs them on Docker's bridge, never on the host's network.
CONTAINERS_HOST = "host.docker.internal"
DEFAULT_ENDPOINT = f"http://{CONTAINERS_HOST}:{DEFAULT_PORT}"
DOCKER_BRIDGE = "docker0"
ENV_FILE = ROOT / "sam-local.env.json"
# OTEL_SDK_DISABLED is declared under a condition, which sam local does not resolve: it would set
# it blank, where AWS (tracing off, the template's default) sets "true".
FOR_EVERY_FUNCTION = {"AI_AGENT_MODE": "mock", "POWERTOOLS_LOG_LEVEL": "INFO", "OTEL_SDK_DISABLED": "true"}


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
        variables = (body["Properties"].get("Environment") or {}).get("Variables", {})
        for variable, value in variables.items():
            ref = str(value.get("Ref")) if isinstance(value, dict) else ""
            kind = resources.get(ref, {}).get("Type")
            if deployed and kind in {"AWS::DynamoDB::Table", "AWS::SQS::Queue"}:
                names[variable] = deployed[ref]  # a table's name, a queue's URL
            elif kind == "AWS::DynamoDB::Table":
                names[variable] = local_table_name(ref)
            elif kind == "AWS::SQS::Queue":
                name = queue_name(ref, resources[ref].get("Properties", {}))
                names[variable] = f"{endpoint}/{LOCAL_ACCOUNT_ID}/{name}"
        if "SOCKET_API_ENDPOINT" in variables:  # sam local serves no WebSocket API: frames go nowhere
            names.update(SOCKET_API_ENDPOINT="", CONNECTIONS_TABLE="")
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


def interface_address(name: str) -> str | None:
    """The IPv4 address of a network interface (Docker's bridge, docker0), or None without one."""
    siocgifaddr = 0x8915
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            packed = fcntl.ioctl(probe.fileno(), siocgifaddr, struct.pack("256s", name.encode()[:15]))
        except OSError:
            return None
    return socket.inet_ntoa(packed[20:24])


class EndpointServers:
    """One moto state served on 127.0.0.1 and on further addresses (Docker's bridge gateway), all
    on the same port, DynamoDB one request at a time across them."""

    def __init__(self, port: int, also_on: Sequence[str] = ()) -> None:
        app = serialised_moto_app()
        self._loopback = serialised_moto_server(port=port, app=app)
        self._loopback.start()
        self.port: int = self._loopback.get_host_and_port()[1]
        self._others = [serialised_moto_server(port=self.port, ip_address=address, app=app) for address in also_on]
        for server in self._others:
            server.start()
        self.addresses = ["127.0.0.1", *also_on]

    @property
    def url(self) -> str:
        """The endpoint as this machine reaches it."""
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        for server in [*self._others, self._loopback]:
            server.stop()


def serve_endpoint(
    port: int, template: dict[str, Any] | None = None, also_on: Sequence[str] = ()
) -> tuple[EndpointServers, str]:
    """A started moto server on 127.0.0.1:port (and ``also_on``) holding the template's tables and
    queues; the URL returned is the loopback one."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    template = template or load_template()
    servers = EndpointServers(port, also_on)  # DynamoDB atomic per request, as the real service
    url = servers.url
    keys = {"region_name": "us-east-1", "aws_access_key_id": "local", "aws_secret_access_key": "local"}
    ensure_tables(boto3.client("dynamodb", endpoint_url=url, **keys), template)
    resolver = IntrinsicResolver(template, region="us-east-1")
    ensure_queues(boto3.client("sqs", endpoint_url=url, **keys), queue_specs(template, resolver))
    return servers, url


class StackUnreadable(Exception):
    """The deployed stack's resources could not be listed; the message says what to set or fix."""


def deployed_stack_resources(stack_name: str) -> dict[str, str]:
    """``stack_resources`` of a deployed stack with the shell's AWS settings; what a newcomer is
    missing (a region, credentials, the stack itself) is a ``StackUnreadable`` naming the fix."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError

    try:
        # AWS_REGION as the AWS CLI reads it too; boto3 alone reads only AWS_DEFAULT_REGION and profiles.
        client = boto3.client("cloudformation", region_name=os.environ.get("AWS_REGION") or None)
        return stack_resources(client, stack_name)
    except NoRegionError:
        raise StackUnreadable(
            f"no AWS region to look for stack {stack_name!r} in: set AWS_REGION (or AWS_DEFAULT_REGION), "
            "or AWS_PROFILE naming a profile with a region"
        ) from None
    except NoCredentialsError:
        raise StackUnreadable(
            f"no AWS credentials to read stack {stack_name!r} with: set AWS_PROFILE (after `aws configure` "
            "or `aws sso login`), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        ) from None
    except ClientError as error:
        details = error.response.get("Error", {})
        raise StackUnreadable(
            f"cannot list the resources of stack {stack_name!r}: {details.get('Code')}: {details.get('Message')}"
        ) from None
    except BotoCoreError as error:
        raise StackUnreadable(f"cannot list the resources of stack {stack_name!r}: {error}") from None


def _command_env_file(args: argparse.Namespace) -> int:
    try:
        deployed = deployed_stack_resources(args.stack) if args.stack else None
    except StackUnreadable as error:
        print(f"python -m devtools.sam_local env-file: error: {error}", file=sys.stderr)
        return 2
    json.dump(env_file_document(args.endpoint, deployed=deployed), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def _command_endpoint(args: argparse.Namespace) -> int:
    bridge = interface_address(DOCKER_BRIDGE)
    servers, _ = serve_endpoint(args.port, also_on=[bridge] if bridge else [])
    tables = sorted(local_table_name(t) for t in resources_of_type("AWS::DynamoDB::Table"))
    where = " and ".join(f"{address}:{servers.port}" for address in servers.addresses)
    print(f"[sam-local] DynamoDB and SQS on {where}: {len(tables)} tables ({', '.join(tables)})", file=sys.stderr)
    if bridge:
        print(f"[sam-local] containers reach it as {CONTAINERS_HOST}:{servers.port} ({DOCKER_BRIDGE})", file=sys.stderr)
    else:
        print(f"[sam-local] no {DOCKER_BRIDGE}: only Docker Desktop's {CONTAINERS_HOST} reaches it", file=sys.stderr)
    next_steps = "sam local start-api, or sam local invoke <Function> -e events/<file>; Ctrl-C stops"
    print(f"[sam-local] now: {next_steps}", file=sys.stderr)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        servers.stop()
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
