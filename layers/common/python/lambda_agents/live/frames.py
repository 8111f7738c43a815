"""The JSON frames the WebSocket API sends (docs/api.md#websocket), each with its ``type``:

- ``accepted`` {clientMessageId, sessionId, to, seq}: a ``sendMessage`` was taken; its answer
  comes as the frames below, and is readable by GET as a REST answer is.
- ``delta`` {sessionId, seq, offset, text}: the words written since the last delta, starting at
  character ``offset`` of the answer being written (a new attempt after a failed one starts again
  at 0), so a client keeps ``answer = answer[:offset] + text``.
- ``progress`` {sessionId, seq, agent, step, state}: which of the interview's agents works.
- ``done`` {sessionId, seq, ...}: the answer as stored, as its REST answer carries it, without
  the session's history (``conversation``: the client has it, and it would pass the size limit).
- ``error`` {sessionId?, clientMessageId?, error: {code, message, details?}}: the API's error shape.

``seq`` names the answer as its REST read does: a chat answer's seq (an integer,
``GET /ai-agent/sessions/{id}/messages/{seq}``), an interview turn's id (a string,
``GET /interviews/{id}/turns/{turnId}``).

API Gateway refuses a message over 128 KB (``MAX_MESSAGE_BYTES``), so no frame above it is ever
posted: a ``done`` that would pass it carries its longest text cut to fit and ``truncatedText:
true``, and the client reads the whole answer by GET.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_MESSAGE_BYTES = 128 * 1024
HISTORY_FIELD = "conversation"
Seq = int | str


class Frame(BaseModel):
    # Built on first use: a function that never pushes a frame never pays for the schemas at cold start.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    type: str


class AcceptedFrame(Frame):
    type: Literal["accepted"] = "accepted"
    clientMessageId: str  # noqa: N815 - the frame's JSON names
    sessionId: str  # noqa: N815
    to: Literal["chat", "interview"]
    seq: Seq


class DeltaFrame(Frame):
    type: Literal["delta"] = "delta"
    sessionId: str  # noqa: N815
    seq: Seq
    offset: int = Field(ge=0)
    text: str


class ProgressFrame(Frame):
    type: Literal["progress"] = "progress"
    sessionId: str  # noqa: N815
    seq: Seq
    agent: str
    step: str
    state: Literal["started", "done"]


class DoneFrame(Frame):
    """The answer's fields travel as the frame's own (``extra``), as its REST answer names them."""

    model_config = ConfigDict(frozen=True, extra="allow", defer_build=True)

    type: Literal["done"] = "done"
    sessionId: str  # noqa: N815
    seq: Seq
    truncatedText: bool = False  # noqa: N815


class ErrorDetail(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow", defer_build=True)

    code: str
    message: str
    details: Any = None


class ErrorFrame(Frame):
    type: Literal["error"] = "error"
    sessionId: str | None = None  # noqa: N815
    clientMessageId: str | None = None  # noqa: N815
    seq: Seq | None = None
    error: ErrorDetail


def encoded(frame: Frame) -> bytes:
    """The frame as posted: UTF-8 JSON, its characters as they are, absent fields left out."""
    return json.dumps(frame.model_dump(mode="json", exclude_none=True), ensure_ascii=False).encode()


def done_frame(session_id: str, seq: Seq, answer: dict[str, Any]) -> DoneFrame:
    """The ``done`` of an answer whose REST answer is ``answer``, within ``MAX_MESSAGE_BYTES``."""
    carried = {key: value for key, value in answer.items() if key not in (HISTORY_FIELD, "type", "sessionId", "seq")}
    frame = DoneFrame(sessionId=session_id, seq=seq, **carried)
    excess = len(encoded(frame)) - MAX_MESSAGE_BYTES
    if excess <= 0:
        return frame
    path = _longest_text(carried, ())
    if path is None:
        return DoneFrame(sessionId=session_id, seq=seq, truncatedText=True)
    text = _at(carried, path)
    kept = text.encode()[: max(0, len(text.encode()) - excess - 64)].decode(errors="ignore")
    cut = _replaced(carried, path, kept)
    frame = DoneFrame(sessionId=session_id, seq=seq, truncatedText=True, **cut)
    if len(encoded(frame)) > MAX_MESSAGE_BYTES:  # escapes grew the JSON more than the bytes cut
        return DoneFrame(sessionId=session_id, seq=seq, truncatedText=True)
    return frame


def error_frame(
    code: str,
    message: str,
    *,
    session_id: str | None = None,
    client_message_id: str | None = None,
    seq: Seq | None = None,
    details: Any = None,
) -> ErrorFrame:
    return ErrorFrame(
        sessionId=session_id,
        clientMessageId=client_message_id,
        seq=seq,
        error=ErrorDetail(code=code, message=message, details=details),
    )


Path = tuple[str | int, ...]


def _longest_text(value: Any, path: Path) -> Path | None:
    """Where the longest string of ``value`` is (its keys and indexes), None when it has none."""
    if isinstance(value, str):
        return path
    items: list[tuple[str | int, Any]] = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    found = [p for key, item in items if (p := _longest_text(item, (*path, key))) is not None]
    return max(found, key=lambda p: len(_at(value, p[len(path) :])), default=None)


def _at(value: Any, path: Path) -> Any:
    for key in path:
        value = value[key]
    return value


def _replaced(value: Any, path: Path, text: str) -> Any:
    if not path:
        return text
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replaced(value[head], rest, text)}
    copy = list(value)
    copy[int(head)] = _replaced(copy[int(head)], rest, text)
    return copy
