"""The AWS services the local runner and the demo use, without AWS or Docker (docs/local.md#the-local-runner-no-docker).

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import copy
import functools
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import boto3
from boto3.dynamodb.types import TypeSerializer
from botocore.config import Config
from lambda_agents.nudges.profile import UserProfile
from lambda_agents.storage.users import profile_item

from .runner_template import QueueSpec
from .template import create_tables

DEFAULT_REGION = "us-east-1"
# Credentials for local endpoints only: they never reach AWS because every endpoint is local.
FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"}


@dataclass(frozen=True)
class LocalEndpoints:
    region: str
    dynamodb: str
    sqs: str
    embedded: bool  # whether an embedded moto server answers at least one of them
    events: str = ""


def region_of(environ: Mapping[str, str]) -> str:
    return environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION


def has_credentials(environ: Mapping[str, str]) -> bool:
    return bool(environ.get("AWS_ACCESS_KEY_ID") or environ.get("AWS_PROFILE"))


class LocalAws:
    """Endpoints and clients for local DynamoDB and SQS; starts moto only for what is not given.

    Use as a context manager (or ``start()`` / ``stop()``).
    """

    def __init__(self, environ: Mapping[str, str] | None = None, *, force_embedded: bool = False) -> None:
        env = dict(os.environ if environ is None else environ)
        self._region = region_of(env)
        self._given_dynamodb = None if force_embedded else env.get("AWS_ENDPOINT_URL_DYNAMODB") or None
        self._given_sqs = None if force_embedded else env.get("AWS_ENDPOINT_URL_SQS") or None
        self._given_events = None if force_embedded else env.get("AWS_ENDPOINT_URL_EVENTBRIDGE") or None
        self._credentials = {} if has_credentials(env) and not force_embedded else dict(FAKE_CREDENTIALS)
        self._server: Any = None
        self._endpoints: LocalEndpoints | None = None

    @property
    def region(self) -> str:
        return self._region

    @property
    def endpoints(self) -> LocalEndpoints:
        if self._endpoints is None:
            raise RuntimeError("LocalAws is not started")
        return self._endpoints

    @property
    def credentials(self) -> dict[str, str]:
        """Fake credentials to set when the user has none (empty when they have their own)."""
        return dict(self._credentials)

    def start(self) -> LocalEndpoints:
        if self._endpoints is not None:
            return self._endpoints
        embedded_url = ""
        if self._given_dynamodb is None or self._given_sqs is None or self._given_events is None:
            # werkzeug logs every request to stderr; the runner's own log is what matters there.
            logging.getLogger("werkzeug").setLevel(logging.ERROR)

            # Port 0: the OS picks a free port, so parallel runs and test workers never collide.
            self._server = serialised_moto_server()
            self._server.start()
            host, port = self._server.get_host_and_port()
            embedded_url = f"http://{host}:{port}"
        self._endpoints = LocalEndpoints(
            region=self._region,
            dynamodb=self._given_dynamodb or embedded_url,
            sqs=self._given_sqs or embedded_url,
            embedded=self._server is not None,
            events=self._given_events or embedded_url,
        )
        return self._endpoints

    def reset(self) -> None:
        """Forget every embedded table, item and message (moto keeps one state per process)."""
        if self._server is not None:
            import urllib.request

            host, port = self._server.get_host_and_port()
            request = urllib.request.Request(f"http://{host}:{port}/moto-api/reset", method="POST")
            with urllib.request.urlopen(request, timeout=10):
                pass

    def stop(self) -> None:
        """Stop the embedded server and forget its state: moto keeps one state per process, and a
        later server in the same process (the next test, the demo) must start empty, as a new
        process would."""
        if self._server is not None:
            self.reset()
            self._server.stop()
            self._server = None
        self._endpoints = None

    def __enter__(self) -> LocalAws:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def client(self, service: str) -> Any:
        endpoints = self.endpoints
        url = {"dynamodb": endpoints.dynamodb, "sqs": endpoints.sqs, "events": endpoints.events}.get(service)
        if url is None:
            raise ValueError(f"no local endpoint for {service!r}")
        keys = self._credentials
        return boto3.client(
            service,
            endpoint_url=url,
            region_name=endpoints.region,
            aws_access_key_id=keys.get("AWS_ACCESS_KEY_ID"),
            aws_secret_access_key=keys.get("AWS_SECRET_ACCESS_KEY"),
            config=Config(retries={"mode": "standard", "max_attempts": 3}),
        )


def put_profiles(dynamodb: Any, *profiles: UserProfile) -> None:
    """Nudge profiles written into the local UsersTable (``dynamodb``: a client of it) as the
    profile's storage writes them (``storage.users.profile_item``), so a seeded row is what the
    product reads."""
    serialize = TypeSerializer().serialize
    for profile in profiles:
        item = {name: serialize(value) for name, value in profile_item(profile).items()}
        dynamodb.put_item(TableName="UsersTable", Item=item)


WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class DynamoDbOneAtATime:
    """WSGI middleware: DynamoDB requests (``X-Amz-Target: DynamoDB_...``) run one at a time,
    their answer read whole inside the lock; other services' requests (an SQS long poll) are not
    held up."""

    def __init__(self, app: WsgiApp) -> None:
        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not str(environ.get("HTTP_X_AMZ_TARGET", "")).startswith("DynamoDB_"):
            return self._app(environ, start_response)
        with self._lock:
            return list(self._app(environ, start_response))


def rollback_by_item(transact_write_items: Callable[..., Any]) -> Callable[..., Any]:
    """moto's ``transact_write_items`` with a rollback that saves the items the transaction names
    instead of a deep copy of every table it touches.

    moto copies each table whole before every transaction, so a local fan-out that stores a few
    hundred users' schedules (a transaction each, in a table of thousands of items) spent its time
    copying tables while every other DynamoDB request waited (the server runs them one at a time).
    DynamoDB's own cost does not grow with the table. Here moto's copy is made a no-op for the
    call and the named items are put back as they were when the transaction fails."""

    @functools.wraps(transact_write_items)
    def with_item_rollback(backend: Any, transact_items: list[dict[str, Any]]) -> Any:
        saved: list[tuple[str, dict[str, Any], Any]] = []
        tables: dict[str, Any] = {}
        for entry in transact_items:
            _, operation = next(iter(entry.items()))
            name = operation.get("TableName")
            if not isinstance(name, str) or name not in backend.tables:
                continue
            table = tables[name] = backend.tables[name]
            key = operation.get("Key")
            if key is None and isinstance(operation.get("Item"), dict):
                attributes = operation["Item"]
                key = {table.hash_key_attr: attributes.get(table.hash_key_attr)}
                if table.range_key_attr is not None:
                    key[table.range_key_attr] = attributes.get(table.range_key_attr)
            if not isinstance(key, dict) or None in key.values():
                continue  # moto refuses the transaction before it writes anything
            current = backend.get_item(name, key)
            saved.append((name, key, None if current is None else copy.deepcopy(current.to_json()["Attributes"])))
        for table in tables.values():
            table.__deepcopy__ = lambda memo, table=table: table  # moto's whole-table copy: the table itself
        try:
            return transact_write_items(backend, transact_items)
        except Exception:
            for name, key, attributes in reversed(saved):
                if attributes is None:
                    if backend.get_item(name, key) is not None:
                        backend.delete_item(name, key)
                else:
                    backend.put_item(name, attributes)
            raise
        finally:
            for table in tables.values():
                table.__dict__.pop("__deepcopy__", None)

    with_item_rollback.rolls_back_by_item = True  # type: ignore[attr-defined]
    return with_item_rollback


def serialised_moto_app() -> Any:
    """moto's WSGI app wrapped in DynamoDbOneAtATime, its transactions rolled back by item
    (``rollback_by_item``): what every server of ``serialised_moto_server`` serves."""
    from moto.dynamodb.models import DynamoDBBackend
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    if not getattr(DynamoDBBackend.transact_write_items, "rolls_back_by_item", False):
        DynamoDBBackend.transact_write_items = rollback_by_item(  # type: ignore[method-assign]
            DynamoDBBackend.transact_write_items
        )
    return DynamoDbOneAtATime(DomainDispatcherApplication(create_backend_app))


def serialised_moto_server(port: int = 0, ip_address: str = "127.0.0.1", app: Any = None) -> Any:
    """moto's ThreadedMotoServer on ip_address (port 0: a free one) serving ``app``, or a new
    ``serialised_moto_app``. Servers given one app share its one-at-a-time DynamoDB lock."""
    from moto.moto_server.werkzeug_app import MotoRequestHandler
    from moto.server import ThreadedMotoServer
    from werkzeug.serving import make_server

    served = app if app is not None else serialised_moto_app()

    class SerialisedMotoServer(ThreadedMotoServer):  # type: ignore[misc]
        def _server_entry(self) -> None:
            # ThreadedMotoServer._server_entry with the app wrapped; a test fails if moto changes it.
            self._server = make_server(self._ip_address, self._port, served, True, request_handler=MotoRequestHandler)
            self._server_ready_event.set()
            self._server.serve_forever()

    return SerialisedMotoServer(ip_address=ip_address, port=port, verbose=False)


def ensure_tables(dynamodb: Any, template: dict[str, Any] | None = None) -> list[str]:
    """Create the template's tables that are missing; returns the names created."""
    created: list[str] = create_tables(dynamodb, template=template)
    return created


def ensure_queues(sqs: Any, queues: Mapping[str, QueueSpec]) -> dict[str, str]:
    """Create the template's queues (dead-letter queues first); returns logical ID -> queue URL.

    CreateQueue is idempotent for equal attributes, so an existing queue is simply looked up.
    """
    urls = {}
    for logical_id, spec in queues.items():
        urls[logical_id] = sqs.create_queue(QueueName=spec.name, Attributes=spec.attributes)["QueueUrl"]
    return urls
