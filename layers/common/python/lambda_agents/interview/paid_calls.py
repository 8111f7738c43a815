"""The model calls a turn's request already paid for, taken again by the worker that runs the turn
after it (docs/interview.md#turns-answered-later).

Why: a turn the request's deadline cuts is handed to the worker, which runs it from its start
(nothing of the cut run was committed). Without this the worker made again every call the request
had completed: the same requests, billed twice. So the request keeps each answer it was given
(``TurnCallBook``, through the model its agents call for the turn, ``around``) and, when it hands
the turn over, stores them under the turn's identity (``TurnCallRecords``: the session, the turn's
id and the session version the turn starts from). The worker, replaying the turn, is given a stored
answer instead of calling when the same agent sends the same request (the same purpose and
``request_digest``: messages, tools, output schema, temperature; not ``max_tokens``, which each
container plans for its own time) in the same turn, in the order the request got them; any other
request is the model's.

An answer is kept only whole: one that stopped at its ``max_tokens`` (``length``) says what that
budget allowed, and a cut one never came back. A replayed answer carries no usage: the request's
calls are counted where they were spent (the request's share of the day, and ``spentBefore`` in
the turn's ``usageTotal``), never again. Storing or reading the record failing loses only the
saving: logged, never raised.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from ..llm.types import ChatModel, ChatRequest, ChatResponse, ToolCall, Usage
from ..observability import logger

UNREPLAYABLE_FINISHES = frozenset({"length"})


def request_digest(request: ChatRequest) -> str:
    """What decides a request's answer, hashed: the purpose (the agent), the messages, what the
    model may answer with, the temperature. Not ``max_tokens`` nor the pacing (each container's own)."""
    sent = {
        "purpose": request.purpose,
        "messages": request.messages,
        "parameters": asdict(request.parameters),
        "temperature": request.temperature,
    }
    encoded = json.dumps(sent, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")
    return hashlib.sha256(encoded).hexdigest()


@dataclass(frozen=True)
class PaidCall:
    """One answer the request was given: its request's purpose and digest, the answer as the
    provider returned it, and what it was billed (its ``usage``)."""

    purpose: str
    digest: str
    response: ChatResponse

    def as_dict(self) -> dict[str, Any]:
        answer = self.response
        usage = answer.usage
        return {
            "purpose": self.purpose,
            "digest": self.digest,
            "content": answer.content,
            "finishReason": answer.finish_reason,
            "refusal": answer.refusal,
            "toolCalls": [[call.id, call.name, call.arguments] for call in answer.tool_calls],
            "model": answer.model,
            "serviceTier": answer.service_tier,
            "usage": [usage.prompt_tokens, usage.completion_tokens, usage.reasoning_tokens, usage.cached_prompt_tokens],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PaidCall:
        prompt, completion, reasoning, cached = (int(value) for value in data["usage"])
        response = ChatResponse(
            content=data.get("content"),
            finish_reason=str(data["finishReason"]),
            refusal=data.get("refusal"),
            tool_calls=tuple(ToolCall(str(i), str(name), str(args)) for i, name, args in data.get("toolCalls") or []),
            usage=Usage(prompt, completion, reasoning, cached_prompt_tokens=cached),
            model=str(data.get("model") or ""),
            service_tier=data.get("serviceTier"),
        )
        return cls(str(data["purpose"]), str(data["digest"]), response)


@dataclass(frozen=True)
class PaidTurnCalls:
    """What is stored for a handed-over turn: its identity and the answers its request was given."""

    session_id: str
    turn_id: str
    session_version: int  # the version the turn starts from (the one its mark was set at)
    calls: tuple[PaidCall, ...]


class TurnCallRecords(Protocol):
    """Where a handed-over turn's paid calls are kept (``storage.turn_calls``)."""

    def write(self, record: PaidTurnCalls) -> None: ...

    def read(self, session_id: str, turn_id: str) -> PaidTurnCalls | None: ...


@dataclass
class TurnCallBook:
    """One run of one turn's model calls: the answers an earlier run paid for (``paid``, taken in
    order per digest), the answers this run was given (``made``), and how many answers were taken
    per purpose (``replayed``): calls this run did not make, which its count of model calls leaves out."""

    paid: Sequence[PaidCall] = ()
    made: list[PaidCall] = field(default_factory=list)
    replayed: Counter[str] = field(default_factory=Counter)
    _waiting: dict[str, deque[PaidCall]] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        for call in self.paid:
            self._waiting.setdefault(call.digest, deque()).append(call)

    def around(self, model: ChatModel) -> ChatModel:
        """``model`` as this run's agents call it."""
        return _BookedModel(model, self)

    def take(self, digest: str) -> PaidCall | None:
        waiting = self._waiting.get(digest)
        if not waiting:
            return None
        call = waiting.popleft()
        self.replayed[call.purpose] += 1
        return call

    def made_of(self, purposes: Iterable[str]) -> int:
        """How many answers of these purposes (agents) this run was given by the model."""
        wanted = set(purposes)
        return sum(call.purpose in wanted for call in self.made)

    def replayed_of(self, purposes: Iterable[str]) -> int:
        """How many answers of these purposes (agents) were taken instead of called."""
        return sum(self.replayed[purpose] for purpose in set(purposes))


class _BookedModel:
    """A ChatModel that answers a request an earlier run of the turn paid for with that answer
    (without usage: it was counted there), and keeps every whole answer the model gives."""

    def __init__(self, model: ChatModel, book: TurnCallBook) -> None:
        self._model = model
        self._book = book

    @property
    def model_name(self) -> str:
        return self._model.model_name

    def __getattr__(self, name: str) -> Any:  # the adapter's own settings (its ``speed_prior``)
        return getattr(self._model, name)

    def complete(self, request: ChatRequest) -> ChatResponse:
        digest = request_digest(request)
        paid = self._book.take(digest)
        if paid is not None:
            logger.info("model call taken from the request that paid for it", extra={"purpose": request.purpose})
            answer = replace(paid.response, usage=Usage())
            heard = request.heard()
            if heard is not None:
                heard.attempt_started()
                heard.whole(answer)
            return answer
        response = self._model.complete(request)
        if response.finish_reason not in UNREPLAYABLE_FINISHES:
            self._book.made.append(PaidCall(request.purpose, digest, response))
        return response


def record_paid_calls(
    records: TurnCallRecords | None, book: TurnCallBook | None, session_id: str, turn_id: str, version: int
) -> None:
    """The request's part, as it hands the turn over: what its calls were given, for the worker."""
    if records is None or book is None or not book.made:
        return
    try:
        records.write(PaidTurnCalls(session_id, turn_id, version, tuple(book.made)))
    except Exception as error:
        logger.warning(
            "the turn's paid calls not recorded: the worker makes them again",
            extra={"sessionId": session_id, "turnId": turn_id, "error_type": type(error).__name__},
        )


def paid_calls(records: TurnCallRecords | None, session_id: str, turn_id: str, version: int) -> TurnCallBook:
    """The worker's part: the calls the request paid for in this very turn (its id, and the session
    version it starts from), or none."""
    if records is None:
        return TurnCallBook()
    try:
        record = records.read(session_id, turn_id)
    except Exception as error:
        logger.warning(
            "the turn's paid calls not read: the worker makes them again",
            extra={"sessionId": session_id, "turnId": turn_id, "error_type": type(error).__name__},
        )
        return TurnCallBook()
    if record is None or (record.session_id, record.turn_id, record.session_version) != (session_id, turn_id, version):
        return TurnCallBook()
    return TurnCallBook(record.calls)
