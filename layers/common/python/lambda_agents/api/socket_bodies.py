"""The bodies the WebSocket API's ``sendMessage`` takes (``api.socket_messages``): the REST message
routes' bodies (their fields, limits and checks) with the socket's own fields. Imported with the first
message: their schemas are not built at a cold start."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from ..chat.requests import SESSION_ID_MAX_CHARS, PostMessageRequest
from ..chat.requests import SESSION_ID_PATTERN as CHAT_SESSION_ID_PATTERN
from ..interview.requests import MessageBody
from ..interview.rules.models import SESSION_ID_PATTERN as INTERVIEW_SESSION_ID_PATTERN
from .idempotency import KEY_PATTERN

# The REST Idempotency-Key's pattern: a clientMessageId is the message's retry key.
ClientMessageId = Annotated[str, Field(alias="clientMessageId", pattern=KEY_PATTERN, max_length=128)]


class ChatSocketMessage(PostMessageRequest):
    action: Literal["sendMessage"]
    to: Literal["chat"]
    session_id: str = Field(alias="sessionId", pattern=CHAT_SESSION_ID_PATTERN, max_length=SESSION_ID_MAX_CHARS)
    client_message_id: ClientMessageId


class InterviewSocketMessage(MessageBody):
    action: Literal["sendMessage"]
    to: Literal["interview"]
    session_id: str = Field(alias="sessionId", pattern=INTERVIEW_SESSION_ID_PATTERN, max_length=32)
    client_message_id: ClientMessageId


SocketMessage = ChatSocketMessage | InterviewSocketMessage
MESSAGES: TypeAdapter[SocketMessage] = TypeAdapter(Annotated[SocketMessage, Field(discriminator="to")])
