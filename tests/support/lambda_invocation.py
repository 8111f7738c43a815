"""What Lambda hands a handler when a suite invokes it directly: the context object of a named
function, and a queued message as the SQS event source delivers it (the record built by the local
runner's ``devtools.runner_event_sources.sqs_event``, so the two cannot drift apart)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3

from devtools.runner_event_sources import sqs_event
from devtools.runner_lambda import LambdaContext
from devtools.runner_template import QueueSpec

REGION = "us-east-1"
ACCOUNT = "123456789012"
SqsHandler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]


def function_context(name: str, timeout_s: int) -> LambdaContext:
    """The context of function ``name`` (512 MB), whose remaining time counts down from ``timeout_s``."""
    return LambdaContext(name, 512, f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}", "req-1", timeout_s)


def deliver_one(
    url: str, queue_name: str, handler: SqsHandler, context: LambdaContext, *, delivery: int = 1
) -> dict[str, Any]:
    """What Lambda's poller does with the one message waiting at ``url``: a batch of it to
    ``handler`` as its ``delivery``-th receive, then the message deleted unless the handler
    reported it failed. The handler's answer (its ``batchItemFailures``)."""
    sqs = boto3.client("sqs")
    (message,) = sqs.receive_message(QueueUrl=url, AttributeNames=["All"], MaxNumberOfMessages=1)["Messages"]
    event = sqs_event([message], QueueSpec(logical_id=queue_name, name=queue_name), REGION)
    event["Records"][0]["attributes"]["ApproximateReceiveCount"] = str(delivery)
    result = handler(event, context)
    if not result["batchItemFailures"]:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return result
