"""With AWS_SAM_STACK_NAME (and AWS credentials allowed to read the stack, manage its user pool's
users and invoke its API): every route of the deployed API once, as a signed-in user (a Cognito ID
token) or an IAM caller (SigV4), through API Gateway, Lambda, DynamoDB and the configured model."""

from __future__ import annotations

import json
import os
import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from tests.live.conftest import require_live
from tests.live.routes import Caller, run_every_route, template_routes, url_for
from tests.support.http_json import exchange


@dataclass(frozen=True)
class Stack:
    session: Any  # boto3.Session
    api_url: str
    user_pool_id: str
    client_id: str


@pytest.fixture(scope="module")
def stack() -> Stack:
    name = require_live("AWS_SAM_STACK_NAME")["AWS_SAM_STACK_NAME"]
    # An explicit profile wins over the placeholder keys tests/conftest.py sets for offline tests.
    session = boto3.Session(profile_name=os.environ.get("AWS_PROFILE") or None)
    described = session.client("cloudformation").describe_stacks(StackName=name)["Stacks"][0]
    outputs = {output["OutputKey"]: output["OutputValue"] for output in described.get("Outputs", [])}
    return Stack(session, outputs["ApiUrl"].rstrip("/"), outputs["UserPoolId"], outputs["UserPoolClientId"])


@pytest.fixture(scope="module")
def id_token(stack: Stack) -> Iterator[str]:
    """A throwaway user of the stack's pool, signed in with SRP (the client's allowed flow)."""
    from pycognito import Cognito

    cognito = stack.session.client("cognito-idp")
    username = f"live-test-{uuid.uuid4().hex[:12]}@example.com"
    password = f"Lt1!{secrets.token_urlsafe(18)}"
    cognito.admin_create_user(UserPoolId=stack.user_pool_id, Username=username, MessageAction="SUPPRESS")
    try:
        cognito.admin_set_user_password(
            UserPoolId=stack.user_pool_id, Username=username, Password=password, Permanent=True
        )
        user = Cognito(
            stack.user_pool_id, stack.client_id, user_pool_region=stack.session.region_name,
            username=username, session=stack.session,
        )  # fmt: skip
        user.authenticate(password=password)
        yield str(user.id_token)
    finally:
        cognito.admin_delete_user(UserPoolId=stack.user_pool_id, Username=username)


def test_given_the_deployed_stack_when_every_route_is_called_once_then_each_answers_as_documented(
    stack: Stack, id_token: str
) -> None:
    credentials = stack.session.get_credentials().get_frozen_credentials()

    def send(caller: Caller, method: str, path: str, body: Any) -> tuple[int, Any]:
        url = url_for(stack.api_url, path)
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if caller == "user":
            headers["Authorization"] = id_token
        elif caller == "admin":
            signed = AWSRequest(method=method, url=url, data=data, headers=headers)
            SigV4Auth(credentials, "execute-api", stack.session.region_name).add_auth(signed)
            headers = dict(signed.headers.items())
        status, _, answer = exchange(url, method, headers, data, timeout_s=60)
        return status, answer

    run = run_every_route(send)

    assert run.reached_routes() == template_routes()
