"""The WebSocket API's ``sendMessage`` route (docs/api.md#websocket): what a message must be, who
sends it, and the frames its route answers with (two-way: the function's answer is sent back on
the connection the message came by).

``{"action": "sendMessage", "to": "chat", "sessionId", "message", "clientMessageId"}`` or ``{...,
"to": "interview", "sessionId", "text", "clientMessageId"}``: the same fields, limits and checks as
the REST message routes' bodies (the message models extended), the same errors in the API's error
shape, as ``error`` frames: what REST answers 404 (another user's session, an unknown one), 429
(the rate limit, the daily budget), 409 and 503 a socket hears as the same codes. The caller is the
Cognito user the ``$connect`` authorizer let in (``api.identity.socket_caller``), never a field of
the message. ``clientMessageId`` plays the REST ``Idempotency-Key``: a resend after a
reconnect answers the first ``accepted`` and asks the model nothing.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..errors import DomainError
from ..live import AcceptedFrame, Frame, encoded, error_frame
from ..observability import logger
from .error_body import error_body
from .errors import model_failure, storage_failure

if TYPE_CHECKING:  # the bodies' models are built with the first message (socket_bodies), not at cold start
    from .socket_bodies import SocketMessage

ROUTE = "sendMessage"


class MessageRefused(Exception):
    """The message cannot be taken: its ``error`` frame says why."""

    def __init__(self, frame: Frame) -> None:
        super().__init__(frame.type)
        self.frame = frame


def read_message(event: dict[str, Any]) -> SocketMessage:
    """The message of a ``sendMessage`` event; ``MessageRefused`` with the frame that says why not."""
    body = event.get("body") or ""
    route = (event.get("requestContext") or {}).get("routeKey")
    try:
        raw = json.loads(body)
    except ValueError:
        raw = None
    client_message_id = raw.get("clientMessageId") if isinstance(raw, dict) else None
    known_id = client_message_id if isinstance(client_message_id, str) and len(client_message_id) <= 128 else None
    if route != ROUTE or not isinstance(raw, dict):
        what = "not a JSON object" if not isinstance(raw, dict) else f"action {str(raw.get('action'))[:40]!r}"
        message = f'{what}: send {{"action": "sendMessage", "to": "chat" | "interview", ...}}'
        raise MessageRefused(error_frame("UNKNOWN_ACTION", message, client_message_id=known_id))
    from .socket_bodies import MESSAGES

    try:
        return MESSAGES.validate_python(raw)
    except ValidationError as error:
        from .resolver import validation_problems  # only a refused message pays for the REST resolver

        text, details = validation_problems(error.errors(include_url=False, include_input=False))
        raise MessageRefused(
            error_frame("VALIDATION_ERROR", text, client_message_id=known_id, details=details)
        ) from None


def accepted_frame(message: SocketMessage, answer: dict[str, Any]) -> Frame:
    """The route's answer to a message its use case took: ``accepted`` with where its answer is.

    Also when it was answered already (the fallback answer of a turn the queue refused): the
    function that stored that answer pushed its ``done`` to every open connection of the user, the
    sender's included, so the route answering ``done`` as well sent it twice; ``accepted`` tells the
    sender which answer its ``clientMessageId`` became."""
    if answer.get("status") != "pending":
        seq = answer.get("aiResponse", {}).get("seq", 0)
    else:
        seq = answer["answerSeq"] if message.to == "chat" else answer["turnId"]
    return AcceptedFrame(
        clientMessageId=message.client_message_id, sessionId=message.session_id, to=message.to, seq=seq
    )


def refusal_frame(error: Exception, message: SocketMessage | None) -> Frame:
    """What REST would answer for ``error``, as an ``error`` frame (the resolver's mapping)."""
    known = _known(error)
    if known is None:
        logger.exception("unhandled error", extra={"error_type": type(error).__name__})
        known = DomainError("internal error", code="INTERNAL_ERROR")
    detail = json.loads(error_body(known.code, known.message, known.details))["error"]
    return error_frame(
        detail["code"],
        detail["message"],
        session_id=None if message is None else message.session_id,
        client_message_id=None if message is None else message.client_message_id,
        details=detail.get("details"),
    )


def route_answer(frame: Frame) -> dict[str, Any]:
    """The proxy answer API Gateway sends back on the connection (the route's two-way response)."""
    return {"statusCode": 200, "body": encoded(frame).decode()}


def _known(error: Exception) -> DomainError | None:
    from ..llm.errors import DeadlineReached, ProviderFailed
    from ..storage.dynamodb import StorageError

    if isinstance(error, DomainError):
        return error
    if isinstance(error, ProviderFailed | DeadlineReached):
        return model_failure(error)
    if isinstance(error, StorageError):
        return storage_failure(error)
    return None
