"""Who is calling under `sam local start-api`, which fills no Cognito claims and no IAM caller.

The SAM CLI sets ``AWS_SAM_LOCAL=true`` in the containers it runs; Lambda never sets it, and a
test keeps the template from setting it. Only then, a request that carries no identity of its
route's kind gets one from the same headers the local runner reads: ``X-Local-User: <user id>``
becomes the Cognito claims of a user route, ``X-Local-Admin: <name>`` the IAM caller of an admin
route. Deployed, this module returns every event unchanged, so no header can stand for anyone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, Literal

SAM_LOCAL_VARIABLE = "AWS_SAM_LOCAL"
USER_HEADER = "x-local-user"
ADMIN_HEADER = "x-local-admin"
LOCAL_ACCOUNT_ID = "123456789012"
_IDENTITY_VALUE = re.compile(r"^[A-Za-z0-9_+=,.@:/-]{1,128}$")


def running_under_sam_local(environ: Mapping[str, str] | None = None) -> bool:
    return (os.environ if environ is None else environ).get(SAM_LOCAL_VARIABLE) == "true"


def with_sam_local_identity(
    event: Mapping[str, Any], auth: Literal["cognito", "iam"], environ: Mapping[str, str] | None = None
) -> Mapping[str, Any]:
    """``event`` with the local caller in its request context, under sam local only."""
    if not running_under_sam_local(environ):
        return event
    headers = {str(k).lower(): v for k, v in (event.get("headers") or {}).items() if isinstance(v, str)}
    value = headers.get(USER_HEADER if auth == "cognito" else ADMIN_HEADER, "").strip()
    if not _IDENTITY_VALUE.match(value):
        return event
    context = dict(event.get("requestContext") or {})
    if auth == "cognito":
        authorizer = dict(context.get("authorizer") or {})
        if (authorizer.get("claims") or {}).get("sub"):
            return event
        authorizer["claims"] = {"sub": value, "cognito:username": value}
        context["authorizer"] = authorizer
    else:
        identity = dict(context.get("identity") or {})
        if identity.get("userArn"):
            return event
        arn = f"arn:aws:iam::{LOCAL_ACCOUNT_ID}:user/{value}"
        identity.update(userArn=arn, user=value, caller=value, accountId=LOCAL_ACCOUNT_ID)
        context["identity"] = identity
    return {**event, "requestContext": context}
