"""What the local runner adds to API Gateway's own answers: the local fix (docs/local.md#the-local-runner-no-docker).

API Gateway answers a request no route takes (no identity, no such path, not a method of the path)
itself, with the template's gateway responses, and the runner answers it the same way: same status,
same code and message. Deployed, those words are all a client gets; locally the runner knows more,
and says it in the body, where `curl -s` shows it, as ``error.local`` (``local`` at the top level
when the template's body has no ``error`` object): ``fix``, one sentence of what to send instead,
and what it is based on (``header``, ``methods`` the path takes, the ``nearest`` routes). Nothing of
it exists in a deployment, whose gateway responses stay the template's.

A request without the stage (``/nudges/profile`` instead of ``/v1/nudges/profile``) is served at the
root, as ``sam local`` serves it, but the deployed execute-api URL answers 403 there: every such
answer says so in an ``X-Local-Runner-Stage`` header and a log line.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Sequence
from typing import Any

from .runner_api import ADMIN_HEADER, USER_HEADER, HttpRequest, HttpResponse, MethodNotAllowed, RouteTable
from .runner_template import RouteSpec

STAGE_HEADER = "X-Local-Runner-Stage"
NEAREST = 3
# How alike two paths must be (difflib's ratio) for one to be named as the other's nearest route.
NEAREST_CUTOFF = 0.6
_HEADER_NAMES = {USER_HEADER: "X-Local-User", ADMIN_HEADER: "X-Local-Admin"}


def with_local_fix(response: HttpResponse, fix: str, **based_on: Any) -> HttpResponse:
    """``response`` with ``{"fix": fix, **based_on}`` as ``error.local`` in its JSON body."""
    local = {"fix": fix, **based_on}
    try:
        body = json.loads(response.body)
    except ValueError:
        return response
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body["error"]["local"] = local
    elif isinstance(body, dict):
        body["local"] = local
    else:
        return response
    return dataclasses.replace(response, body=json.dumps(body, ensure_ascii=False).encode("utf-8"))


def identity_fix(route: RouteSpec) -> tuple[str, dict[str, Any]]:
    """The fix for a request to ``route`` that carries no caller: which header to send."""
    if route.auth == "cognito":
        header = _HEADER_NAMES[USER_HEADER]
        fix = (
            f"locally, send the header {header}: <user id> as the signed-in user "
            "(deployed: a Cognito ID token in Authorization)"
        )
    else:
        header = _HEADER_NAMES[ADMIN_HEADER]
        fix = (
            f"locally, send the header {header}: <name> as the IAM caller, or sign the request with SigV4 "
            "(curl --aws-sigv4 'aws:amz:<region>:execute-api'), as the deployed API requires"
        )
    return fix, {"header": header}


def route_fix(
    matched: MethodNotAllowed | None, table: RouteTable, method: str, route_path: str, prefix: str
) -> tuple[str, dict[str, Any]]:
    """The fix for a request no route takes: the methods its path takes, or the nearest routes."""
    if matched is not None:
        methods = list(matched.allowed)
        fix = f"{prefix}{route_path} takes {', '.join(methods)}, not {method.upper()}"
        return fix, {"methods": methods}
    nearest = nearest_routes(table.routes, method, route_path)
    if not nearest:
        return f"no route has the path {prefix}{route_path}; `python -m devtools.runner list` shows them", {}
    named = [f"{route.method} {prefix}{route.path}" for route in nearest]
    return f"no route has the path {prefix}{route_path}; nearest: {'; '.join(named)}", {"nearest": named}


def nearest_routes(routes: Sequence[RouteSpec], method: str, route_path: str) -> list[RouteSpec]:
    """Up to NEAREST routes whose path is most like ``route_path`` (a ``{param}`` segment standing for
    whatever the request has there), those of the request's method first among equals."""
    requested = [segment for segment in route_path.strip("/").split("/") if segment]
    scored: list[tuple[float, bool, str, RouteSpec]] = []
    for route in routes:
        declared = [segment for segment in route.path.strip("/").split("/") if segment]
        literal = [index for index, segment in enumerate(declared) if not segment.startswith("{")]
        # The declared path's literal segments against what the request has at their places (and
        # whatever it has past the declared path's end): a parameter matches anything.
        theirs = [declared[index] for index in literal]
        ours = [requested[index] if index < len(requested) else "" for index in literal] + requested[len(declared) :]
        ratio = difflib.SequenceMatcher(None, "/".join(ours), "/".join(theirs)).ratio()
        if ratio >= NEAREST_CUTOFF:
            scored.append((ratio, route.method == method.upper(), route.path, route))
    scored.sort(key=lambda item: (-item[0], not item[1], item[2]))
    return [route for *_, route in scored[:NEAREST]]


def served_at_root(request: HttpRequest, response: HttpResponse, stage_prefix: str) -> tuple[HttpResponse, str]:
    """``response`` to a request that came without the stage, with the header that says so, and the
    log line."""
    deployed = f"{stage_prefix}{request.path}"
    note = f"served at the root as sam local does; the deployed API answers 403 here: call {deployed}"
    answered = dataclasses.replace(response, headers=[*response.headers, (STAGE_HEADER, note)])
    return answered, f"{request.method} {request.path}: {note}"
