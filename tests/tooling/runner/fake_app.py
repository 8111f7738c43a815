"""A tiny application for the runner's own tests (a template and stand-in handlers), so they do
not depend on the real functions other work is still writing."""

from __future__ import annotations

import copy
import json
import os
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from devtools.runner_lambda import Handler
from devtools.runner_template import FunctionSpec

calls: list[tuple[str, Any]] = []


def echo(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """A REST proxy handler that answers with what it received."""
    calls.append(("echo", event))
    body = {
        "resource": event["resource"],
        "pathParameters": event["pathParameters"],
        "query": event["queryStringParameters"],
        "claims": (event["requestContext"].get("authorizer") or {}).get("claims"),
        "userArn": event["requestContext"]["identity"]["userArn"],
        "body": event["body"],
        "isBase64Encoded": event["isBase64Encoded"],
        "headers": sorted((event["headers"] or {}).keys()),
        "table": os.environ.get("ITEMS_TABLE"),
        "remaining_ms": context.get_remaining_time_in_millis(),
    }
    return {"statusCode": 201, "headers": {"Content-Type": "application/json", "X-Echo": "1"}, "body": json.dumps(body)}


def fail_marked_messages(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """An SQS consumer that reports the messages whose body says "fail" as failed."""
    records = event["Records"]
    calls.append(("batch", [(r["body"], r["attributes"]["ApproximateReceiveCount"]) for r in records]))
    failures = [{"itemIdentifier": r["messageId"]} for r in records if r["body"].startswith("fail")]
    return {"batchItemFailures": failures}


def scheduled(event: dict[str, Any], context: Any) -> dict[str, Any]:
    calls.append(("scheduled", event))
    return {"detailType": event["detail-type"], "function": context.function_name}


class NewItem(BaseModel):
    name: str = Field(min_length=1)


def _resolver_app() -> Any:
    """A handler built like the real API functions: the shared resolver, identity, Powertools."""
    from lambda_agents.api.identity import caller_user_id
    from lambda_agents.api.resolver import build_resolver
    from lambda_agents.observability import logger, metrics

    app = build_resolver()

    @app.post("/resolved/items")
    def create(item: NewItem) -> dict[str, str]:
        return {"name": item.name, "owner": caller_user_id(app.current_event.raw_event)}

    @app.get("/resolved/items/<item_id>")
    def read(item_id: str) -> dict[str, str]:
        return {"id": item_id, "owner": caller_user_id(app.current_event.raw_event)}

    @logger.inject_lambda_context
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        calls.append(("resolver", event["path"]))
        result: dict[str, Any] = app.resolve(event, context)
        return result

    return handler


def resolver_api(event: dict[str, Any], context: Any) -> dict[str, Any]:
    global _RESOLVER_HANDLER
    if _RESOLVER_HANDLER is None:
        _RESOLVER_HANDLER = _resolver_app()
    result: dict[str, Any] = _RESOLVER_HANDLER(event, context)
    return result


_RESOLVER_HANDLER: Any = None


def enqueue_work(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """A scheduled producer that sends to the queue its template env names, with plain boto3."""
    import boto3

    sqs = boto3.client("sqs")
    for n in range(4):
        sqs.send_message(QueueUrl=os.environ["WORK_QUEUE_URL"], MessageBody=f"item-{n}")
    return {"queued": 4}


def store_work(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """A queue consumer that writes each message to the table its template env names."""
    import boto3

    dynamodb = boto3.client("dynamodb")
    for record in event["Records"]:
        dynamodb.put_item(TableName=os.environ["ITEMS_TABLE"], Item={"id": {"S": record["body"]}})
    return {"batchItemFailures": []}


def broken(event: dict[str, Any], context: Any) -> dict[str, Any]:
    calls.append(("broken", event))
    raise RuntimeError("handler exploded")


HANDLERS: dict[str, Callable[[Any, Any], Any]] = {
    "EchoFunction": echo,
    "OpenEchoFunction": echo,
    "AdminEchoFunction": echo,
    "ConsumerFunction": fail_marked_messages,
    "ScheduledFunction": scheduled,
    "BrokenFunction": broken,
    "ResolverFunction": resolver_api,
    "ProducerFunction": enqueue_work,
    "StoreFunction": store_work,
}


def _function(events: dict[str, Any], env: dict[str, Any] | None = None) -> dict[str, Any]:
    props: dict[str, Any] = {"CodeUri": "functions/fake/", "Events": events}
    if env:
        props["Environment"] = {"Variables": env}
    return {"Type": "AWS::Serverless::Function", "Properties": props}


def _api(path: str, method: str, auth: dict[str, str] | None = None) -> dict[str, Any]:
    props: dict[str, Any] = {"RestApiId": {"Ref": "Api"}, "Path": path, "Method": method}
    if auth:
        props["Auth"] = auth
    return {"Type": "Api", "Properties": props}


_API_AND_TABLE: dict[str, Any] = {
    "Pool": {"Type": "AWS::Cognito::UserPool", "Properties": {}},
    "Api": {
        "Type": "AWS::Serverless::Api",
        "Properties": {
            "StageName": "v1",
            "Auth": {
                "DefaultAuthorizer": "Cognito",
                "Authorizers": {"Cognito": {"UserPoolArn": {"Fn::GetAtt": ["Pool", "Arn"]}}},
            },
        },
    },
    "ItemsTable": {
        "Type": "AWS::DynamoDB::Table",
        "Properties": {
            "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
        },
    },
}


def mini_template(max_receive_count: int = 2, batch_size: int = 3) -> dict[str, Any]:
    function, api = _function, _api
    return {
        "Globals": {"Function": {"Handler": "app.lambda_handler", "Timeout": 10, "MemorySize": 256}},
        "Resources": {
            **copy.deepcopy(_API_AND_TABLE),
            "WorkQueue": {
                "Type": "AWS::SQS::Queue",
                "Properties": {
                    "VisibilityTimeout": 60,
                    "RedrivePolicy": {
                        "deadLetterTargetArn": {"Fn::GetAtt": ["WorkDeadLetterQueue", "Arn"]},
                        "maxReceiveCount": max_receive_count,
                    },
                },
            },
            "WorkDeadLetterQueue": {"Type": "AWS::SQS::Queue", "Properties": {}},
            "PlainQueue": {"Type": "AWS::SQS::Queue", "Properties": {}},
            "EchoFunction": function(
                {
                    "Item": api("/items/{itemId}", "GET"),
                    "ItemCreate": api("/items", "POST"),
                    "ItemsLatest": api("/items/latest", "PUT"),
                },
                {"ITEMS_TABLE": {"Ref": "ItemsTable"}},
            ),
            "ResolverFunction": function(
                {"Create": api("/resolved/items", "POST"), "Read": api("/resolved/items/{itemId}", "GET")}
            ),
            "StoreQueue": {"Type": "AWS::SQS::Queue", "Properties": {}},
            "ProducerFunction": function(
                {"Tick": {"Type": "Schedule", "Properties": {"Schedule": "rate(1 hour)"}}},
                {"WORK_QUEUE_URL": {"Ref": "StoreQueue"}},
            ),
            "StoreFunction": function(
                {
                    "Store": {
                        "Type": "SQS",
                        "Properties": {"Queue": {"Fn::GetAtt": ["StoreQueue", "Arn"]}, "BatchSize": 10},
                    }
                },
                {"ITEMS_TABLE": {"Ref": "ItemsTable"}},
            ),
            "OpenEchoFunction": function({"Latest": api("/items/latest", "GET", {"Authorizer": "NONE"})}),
            "AdminEchoFunction": function({"Admin": api("/admin/items", "GET", {"Authorizer": "AWS_IAM"})}),
            "ConsumerFunction": function(
                {
                    "Work": {
                        "Type": "SQS",
                        "Properties": {
                            "Queue": {"Fn::GetAtt": ["WorkQueue", "Arn"]},
                            "BatchSize": batch_size,
                            "FunctionResponseTypes": ["ReportBatchItemFailures"],
                        },
                    }
                }
            ),
            "BrokenFunction": function(
                {"Plain": {"Type": "SQS", "Properties": {"Queue": {"Fn::GetAtt": ["PlainQueue", "Arn"]}}}}
            ),
            "ScheduledFunction": function(
                {"Hourly": {"Type": "Schedule", "Properties": {"Schedule": "cron(5 * * * ? *)"}}}
            ),
        },
    }


def fake_loader(function: FunctionSpec) -> Handler:
    return HANDLERS[function.logical_id]


def write_app(root: Path, template: str, package: str, handlers: dict[str, str]) -> Path:
    """An app on disk as ``sam`` and the runner's CLI read it: ``template.yaml`` and one module per
    handler (``<package>/<name>/app.py``) under ``root``."""
    (root / "template.yaml").write_text(template)
    for name, code in handlers.items():
        handler = root / package / name
        handler.mkdir(parents=True)
        (handler / "__init__.py").write_text("")
        (handler / "app.py").write_text(textwrap.dedent(code))
    (root / package / "__init__.py").write_text("")
    return root
