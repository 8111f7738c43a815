"""ChatTable's items (docs/chat-and-templates.md#storage): their keys, and a session and a message
as they are written and read back (``storage.chat`` writes and reads them)."""

from __future__ import annotations

from typing import Any

from ..chat.records import DraftStatus, MessageKind, SessionContext, SessionRecord, StoredMessage
from .dynamodb import from_dynamo, to_dynamo

META = "META"


def session_key(session_id: str) -> dict[str, str]:
    return {"pk": f"SESSION#{session_id}", "sk": META}


def message_sk(seq: int) -> str:
    return f"MSG#{seq:08d}"


def draft_sk(seq: int) -> str:
    return f"DRAFT#{seq:08d}"


def audit_sk(seq: int) -> str:
    return f"AUDIT#{seq:08d}"


def message_item(
    session_id: str,
    message: StoredMessage,
    expires_at: int,
    idempotency_key: str | None = None,
    client_message_id: str | None = None,
) -> dict[str, Any]:
    return {
        "pk": f"SESSION#{session_id}",
        "sk": message_sk(message.seq),
        "type": "message",
        "seq": message.seq,
        "role": message.role,
        "content": message.content,
        "kind": message.kind.value,
        "replyTo": message.reply_to,
        "templateDraft": None if message.template_draft is None else message.template_draft.as_dict(),
        "createdAt": message.created_at,
        "idempotencyKey": idempotency_key,
        "clientMessageId": client_message_id,
        "expiresAt": expires_at,
    }


def message_from_item(item: dict[str, Any]) -> StoredMessage:
    value = from_dynamo(item)
    draft = value.get("templateDraft")
    return StoredMessage(
        seq=int(value["seq"]),
        role=value["role"],
        content=str(value.get("content", "")),
        created_at=str(value.get("createdAt", "")),
        kind=MessageKind(value.get("kind", MessageKind.MESSAGE.value)),
        reply_to=value.get("replyTo"),
        template_draft=DraftStatus.from_dict(draft) if isinstance(draft, dict) else None,
    )


def session_record(value: dict[str, Any]) -> SessionRecord:
    return SessionRecord(
        session_id=str(value["pk"]).removeprefix("SESSION#"),
        user_id=str(value["userId"]),
        context=SessionContext.model_validate(value.get("context") or {}),
        created_at=str(value.get("createdAt", "")),
        message_count=int(value.get("messageCount", 0)),
        updated_at=str(value.get("updatedAt", "")),
        template_seed=str(value.get("templateSeed", "")),
    )


def without_none(item: dict[str, Any]) -> dict[str, Any]:
    cleaned: dict[str, Any] = to_dynamo({key: value for key, value in item.items() if value is not None})
    return cleaned
