"""Identity under `sam local start-api` (lambda_agents.api.sam_local): local headers count only
when the SAM CLI runs the function; deployed, the same request is a 401."""

from __future__ import annotations

from typing import Any

import pytest
from lambda_agents.api.sam_local import with_sam_local_identity

SAM_LOCAL = {"AWS_SAM_LOCAL": "true"}
DEPLOYED: dict[str, str] = {}


def _event(headers: dict[str, str], context: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"headers": headers, "requestContext": context or {"identity": {"sourceIp": "127.0.0.1", "userArn": None}}}


def test_given_sam_local_when_a_user_route_gets_x_local_user_then_it_becomes_the_cognito_sub() -> None:
    event = with_sam_local_identity(_event({"X-Local-User": "user-1"}), "cognito", SAM_LOCAL)

    assert event["requestContext"]["authorizer"]["claims"]["sub"] == "user-1"


def test_given_sam_local_when_an_admin_route_gets_x_local_admin_then_it_becomes_the_iam_caller() -> None:
    event = with_sam_local_identity(_event({"x-local-admin": "ci"}), "iam", SAM_LOCAL)

    assert event["requestContext"]["identity"]["userArn"] == "arn:aws:iam::123456789012:user/ci"
    assert event["requestContext"]["identity"]["sourceIp"] == "127.0.0.1"


@pytest.mark.parametrize(
    ("environ", "headers", "auth"),
    [
        (DEPLOYED, {"X-Local-User": "user-1"}, "cognito"),  # deployed: headers are ignored
        (DEPLOYED, {"X-Local-Admin": "ci"}, "iam"),
        ({"AWS_SAM_LOCAL": "1"}, {"X-Local-User": "user-1"}, "cognito"),  # only SAM's exact value
        (SAM_LOCAL, {"X-Local-Admin": "ci"}, "cognito"),  # an admin is not a user
        (SAM_LOCAL, {"X-Local-User": "user-1"}, "iam"),  # nor a user an IAM caller
        (SAM_LOCAL, {"X-Local-User": "has space"}, "cognito"),
        (SAM_LOCAL, {}, "cognito"),
    ],
)
def test_otherwise_the_event_is_returned_unchanged(environ: dict[str, str], headers: dict[str, str], auth: Any) -> None:
    event = _event(headers)

    assert with_sam_local_identity(event, auth, environ) is event


def test_given_sam_local_when_claims_are_already_there_then_a_header_does_not_replace_them() -> None:
    event = _event({"X-Local-User": "other"}, {"authorizer": {"claims": {"sub": "real"}}})

    assert with_sam_local_identity(event, "cognito", SAM_LOCAL) is event
