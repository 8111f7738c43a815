"""Where the client called the API: the leading part of the URL's path that the route does not see
(the stage, a custom domain's base path), so that every URL the API hands out (a 202's ``Location``, ``answerUrl``,
``turnUrl``) resolves against the URL the client called.

API Gateway (REST, Lambda proxy) fills the event differently for each way in, for a route ``/x``:

- ``https://{api}.execute-api.{region}.amazonaws.com/v1/x``: ``path`` ``/x``, ``requestContext.path`` ``/v1/x``;
- ``https://api.example.com/agents/x`` (a mapping ``agents`` -> stage ``v1``): both ``/agents/x``;
- ``https://api.example.com/x`` (a mapping with no base path): both ``/x``;
- ``sam local start-api`` (serves at the root): ``path`` ``/x``, ``requestContext.path`` the route's resource.

(What AWS was measured to send: localstack/localstack#12296. ``stage`` is ``v1`` in the three deployed cases.)

So the leading part the route did not see is told by the two paths' first segments: behind a
custom domain, ``path`` starts with the base path the function strips (``API_BASE_PATH``, Powertools'
``strip_prefixes``); on the execute-api URL, ``requestContext.path`` starts with ``/{stage}`` and
``path`` does not; otherwise (a root mapping, ``sam local``, a direct invocation) there is none. Only
those leading segments are compared, never the rest, whose percent-encoding API Gateway may give
differently in the two fields. The same deployment thus answers correctly on both URLs at once.

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
    """The event's request context cannot be API Gateway's (a path or stage of the wrong type, a
    stage name API Gateway refuses): no URL handed out could be trusted to resolve."""


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(f"{prefix}/")


def called_base_path(event: Mapping[str, Any], strip_prefixes: Sequence[str] | None) -> str:
    """The stage or base path the client called through (``/v1``, ``/agents``, or ``""``).

    An event without ``requestContext.path`` was not sent by API Gateway (a direct invocation, a
    console test): the root is all that can be said. Raises ``CalledPathMismatch`` for a context
    that cannot be API Gateway's."""
    context = event.get("requestContext")
    called = context.get("path") if isinstance(context, Mapping) else None
    if called is None:
        return ""
    path, stage = event.get("path"), context.get("stage") if isinstance(context, Mapping) else None
    if not isinstance(called, str) or not isinstance(path, str) or not isinstance(stage, (str, type(None))):
        raise CalledPathMismatch("requestContext.path, requestContext.stage and path must be strings")
    for prefix in strip_prefixes or ():
        if _under(path, prefix):  # behind the custom domain: the base path the resolver strips
            return _checked(prefix)
    if stage:
        staged = f"/{stage}"
        rest = called[len(staged) :]
        # The stage before the route (checked against the route's own path when that too starts with it).
        if _under(called, staged) and (not _under(path, staged) or unquote(rest) == unquote(path)):
            return _checked(staged)
    return ""


def _checked(base: str) -> str:
    if not all(BASE_SEGMENT.match(segment) for segment in base.strip("/").split("/")):
        raise CalledPathMismatch(f"{base[:200]!r} is not a stage or base path API Gateway accepts")
    return base


def handed_out(base: str, route_path: str) -> str:
    """The URL a client follows: ``route_path`` (a route of this API) under the called ``base``.
    Raises ValueError when the result is not an absolute path of plain segments (a bug here, never
    something a client should be handed)."""
    url = f"{base}{route_path}"
    dot_segment = any(segment in {".", ".."} for segment in url.split("/"))
    if not route_path.startswith("/") or dot_segment or not HANDED_OUT_PATH.match(url):
        raise ValueError(f"not a URL the API may hand out: {url[:300]!r}")
    return url
