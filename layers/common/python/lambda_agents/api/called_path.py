"""Where the client called the API: the leading part of the URL's path that API Gateway removed
before the route saw it, so that every URL the API hands out (a 202's ``Location``, ``answerUrl``,
``turnUrl``) resolves against the URL the client called (issue 31).

API Gateway (REST, Lambda proxy) fills the event differently for each way in, for a route ``/x``:

- ``https://{api}.execute-api.{region}.amazonaws.com/v1/x``: ``path`` ``/x``, ``requestContext.path`` ``/v1/x``;
- ``https://api.example.com/agents/x`` (a mapping ``agents`` -> stage ``v1``): both ``/agents/x``;
- ``https://api.example.com/x`` (a mapping with no base path): both ``/x``;
- ``sam local start-api`` (serves at the root): ``path`` ``/x``, ``requestContext.path`` the route's resource.

(What AWS was measured to send: localstack/localstack#12296. ``stage`` is ``v1`` in the three deployed cases.)

``requestContext.path`` is what the client called; the resolver routes on ``path`` without the
custom domain's base path (``strip_prefixes``, ``API_BASE_PATH``). The called base is therefore the
segments of ``requestContext.path`` before as many trailing segments as the routed path has:
``/v1`` on the execute-api URL, ``/agents`` behind the custom domain, nothing at a root mapping (or
under ``sam local``, whose ``requestContext.path`` is the resource and has the same count). This
needs no setting: the same deployment answers correctly on both URLs at once.

An absolute path built from it, not a relative reference: the same value serves as the header and
the body field, whichever route hands it out (the POST that was accepted, the GET of an answer still
being written, an ``Idempotency-Key`` replay of a stored answer), and a client reading only the body
needs no memory of the request's URL. A relative reference (``messages/2`` against
``.../sessions/s/messages``) would depend on the route that answered and break on a trailing slash.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote

# A stage name, or a segment of a base path (template.yaml's ApiBasePath pattern): nothing that
# needs escaping in a URL, so the base can be put before a path as it is.
BASE_SEGMENT = re.compile(r"^[A-Za-z0-9._~-]{1,128}$")
# What the API hands out: an absolute path of unreserved segments (route ids are hex, seqs digits).
HANDED_OUT_PATH = re.compile(r"^(/[A-Za-z0-9._~-]{1,256}){1,32}$")


class CalledPathMismatch(ValueError):
    """The event's ``requestContext.path`` does not end with the path the route saw: not an event
    API Gateway's proxy integration made, and no URL handed out could be trusted to resolve."""


def _segments(path: str) -> list[str]:
    return [segment for segment in unquote(path).split("/") if segment]


def routed_path(path: str, strip_prefixes: Sequence[str] | None) -> str:
    """``path`` as the resolver routes on it: without the first prefix it starts with (Powertools'
    ``strip_prefixes`` rule for string prefixes)."""
    for prefix in strip_prefixes or ():
        if path == prefix:
            return "/"
        if path.startswith(f"{prefix}/"):
            return path[len(prefix) :]
    return path


def called_base_path(event: Mapping[str, Any], strip_prefixes: Sequence[str] | None) -> str:
    """The stage or base path the client called through (``/v1``, ``/agents``, or ``""``).

    An event without ``requestContext.path`` was not sent by API Gateway (a direct invocation, a
    console test): the root is all that can be said. Raises ``CalledPathMismatch`` for a
    ``requestContext.path`` that cannot be the called form of the routed path."""
    context = event.get("requestContext")
    called = context.get("path") if isinstance(context, Mapping) else None
    if called is None:
        return ""
    path = event.get("path")
    if not isinstance(called, str) or not isinstance(path, str):
        raise CalledPathMismatch("requestContext.path and path must be strings")
    called_segments = _segments(called)
    routed_segments = _segments(routed_path(path, strip_prefixes))
    extra = len(called_segments) - len(routed_segments)
    if extra < 0:
        raise CalledPathMismatch(f"requestContext.path {called[:200]!r} is shorter than the routed path")
    if extra == 0:
        return ""  # at the root, or sam local's resource-shaped context path
    base, tail = called_segments[:extra], called_segments[extra:]
    if tail != routed_segments:
        raise CalledPathMismatch(f"requestContext.path {called[:200]!r} does not end with the routed path")
    if not all(BASE_SEGMENT.match(segment) for segment in base):
        raise CalledPathMismatch(f"requestContext.path {called[:200]!r} has a stage or base path API Gateway refuses")
    return "/" + "/".join(base)


def handed_out(base: str, route_path: str) -> str:
    """The URL a client follows: ``route_path`` (a route of this API) under the called ``base``.
    Raises ValueError when the result is not an absolute path of plain segments (a bug here, never
    something a client should be handed)."""
    url = f"{base}{route_path}"
    dot_segment = any(segment in {".", ".."} for segment in url.split("/"))
    if not route_path.startswith("/") or dot_segment or not HANDED_OUT_PATH.match(url):
        raise ValueError(f"not a URL the API may hand out: {url[:300]!r}")
    return url
