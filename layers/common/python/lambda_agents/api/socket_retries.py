"""How a WebSocket message's ``clientMessageId`` is kept (docs/api.md#websocket): as the REST routes
keep an ``Idempotency-Key`` (``idempotency.IdempotentCall``, 24 h, the same tables), under a key
prefix of its own per use case.

Why here and not in SocketMessageFunction: the records hold copies of the answers they replay, so
the data they belong to takes them along when it is deleted, and the function that deletes it
(ChatFunction's session deletion) must compute the very ids SocketMessageFunction stored them under.
``IdempotentCall`` (and the Powertools types behind it) is imported when a call is built, not with
this module: SocketMessageFunction's cold start does not pay for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .idempotency import IdempotentCall

SOCKET_CHAT = "socket-chat"
SOCKET_INTERVIEW = "socket-interview"
KEPT_FOR_S = 24 * 3600


def message_payload(user_id: str, session_id: str, client_message_id: str, **text: str) -> dict[str, Any]:
    """What a socket message's record is keyed on (the caller, the session, the id) and checked against (``text``)."""
    return {"userId": user_id, "sessionId": session_id, "idempotencyKey": client_message_id, **text}


def once_per_message(
    run: Callable[[dict[str, Any]], dict[str, Any]],
    ended: Callable[[dict[str, Any], dict[str, Any]], bool],
    table_name: str,
    validated_field: str,
    key_prefix: str,
) -> IdempotentCall:
    """``run`` at most once per ``clientMessageId``: an ``accepted`` is kept, and run again once its
    turn has ``ended`` without its answer."""
    from .idempotency import IdempotentCall

    return IdempotentCall(
        run,
        table_name=table_name,
        key_fields=("userId", "sessionId", "idempotencyKey"),
        validated_field=validated_field,
        expires_after_s=KEPT_FOR_S,
        key_prefix=key_prefix,
        keep=lambda answer: answer.get("status") == "pending",
        stale=ended,
    )


def forget_chat_messages(table_name: str, user_id: str, session_id: str, client_message_ids: Iterable[str]) -> int:
    """Delete the records the socket's chat messages of a session are kept under; returns how many ids."""
    payloads = [message_payload(user_id, session_id, message_id) for message_id in client_message_ids]
    if not payloads:
        return 0
    records = once_per_message(_never_run, _never_stale, table_name, "message", SOCKET_CHAT)
    return records.forget(payloads)


def _never_run(payload: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError("a deletion's records are never run")


def _never_stale(payload: dict[str, Any], answer: dict[str, Any]) -> bool:
    return False
