"""The answer of a route whose work may finish after its request (a chat message, an interview
turn): 200 with the answer, or 202 Accepted with where (``Location``) and when (``Retry-After``)
to read it, and ``Preference-Applied`` when the client's ``Prefer: respond-async`` asked for it
(``api.prefer``). Its OpenAPI answers are declared from the same two models, so the contract and
the answers cannot part.

The domain names where to read the answer as a path of this API's routes (``answerUrl``: ``/ai-agent/...``);
the 202 puts the stage or base path the request came through before it (``api.called_path``), in the
body field and the ``Location`` alike, so that both resolve against the URL the client called, and a
stored answer replayed for an ``Idempotency-Key`` points where the replaying request came from.

The route bodies the chat and the interview share are here too: a POST answered now or later,
with or without an ``Idempotency-Key`` (``post``); a GET at the ``Location`` (``read``); and whether
a 202 kept under a key still holds (``accepted_turn_ended``). What a turn is and how it is answered
is ``lambda_agents.answered_later`` and each domain's."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, Self, TypeVar

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel

from ..answered_later import TurnAccepted
from ..errors import DomainError
from .called_path import handed_out
from .prefer import respond_async


class PendingView(Protocol):
    """A 202's answer model: it says when to look first."""

    @property
    def retry_after_seconds(self) -> int: ...

    @classmethod
    def model_validate(cls, obj: Any) -> Self: ...


class CalledThrough(Protocol):
    """The resolver answering the request: the stage or base path the client called through, and
    the invocation's context (an ``Idempotency-Key``'s record expires with it)."""

    @property
    def called_base_path(self) -> str: ...

    @property
    def lambda_context(self) -> Any: ...


class RetrySafe(Protocol):
    """A route's ``IdempotentCall``: the turn answered at most once per key."""

    def register_lambda_context(self, context: Any) -> None: ...

    def __call__(self, payload: dict[str, Any]) -> dict[str, Any]: ...


class HasResponse(Protocol):
    """A domain's answer that says its body itself (the chat's ``ProcessMessageResult``)."""

    def as_response(self) -> dict[str, Any]: ...


AnswerT = TypeVar("AnswerT", bound=BaseModel)
PendingT = TypeVar("PendingT", bound=PendingView)


@dataclass(frozen=True)
class TurnRoutes(Generic[AnswerT, PendingT]):
    """One route family's two answers: ``answered`` now, or ``pending`` at its ``url_field`` (the
    body field with the route path to read it at). An answer is pending when its ``status`` says so,
    as a handed-over turn's answer does."""

    answered: type[AnswerT]
    pending: type[PendingT]
    url_field: str
    request: CalledThrough
    answered_description: str
    pending_description: str

    @property
    def responses(self) -> dict[int, OpenAPIResponse]:
        return {
            200: {"description": self.answered_description, "content": {"application/json": {"model": self.answered}}},
            202: {"description": self.pending_description, "content": {"application/json": {"model": self.pending}}},
        }

    def response(self, answer: dict[str, Any], preference_applied: bool) -> Response[AnswerT | PendingT]:
        """200 with the answer, or 202 with where (under the called stage or base path) and when to read it."""
        if answer.get("status") != "pending":
            return Response(200, "application/json", self.answered.model_validate(answer))
        location = handed_out(self.request.called_base_path, str(answer[self.url_field]))
        accepted = self.pending.model_validate({**answer, self.url_field: location})
        headers = {"Location": location, "Retry-After": str(accepted.retry_after_seconds)}
        if preference_applied:
            headers["Preference-Applied"] = "respond-async"
        return Response(202, "application/json", accepted, headers=headers)

    def post(
        self,
        turn: dict[str, Any],
        prefer: str | None,
        idempotency_key: str | None,
        *,
        answer: Callable[[dict[str, Any]], dict[str, Any]],
        retry_safe: Callable[[], RetrySafe],
    ) -> Response[AnswerT | PendingT]:
        """A POST of a turn (``turn``: the caller, the resource and what was sent): ``answer``
        gives its body, now or accepted (``respondAsync``: the client's ``Prefer``), at most once
        per ``idempotency_key`` when there is one (``retry_safe``: the route's ``IdempotentCall``)."""
        later = respond_async(prefer)
        turn = {**turn, "respondAsync": later}
        if idempotency_key is None:
            return self.response(answer(turn), later)
        once = retry_safe()
        once.register_lambda_context(self.request.lambda_context)
        return self.response(once({**turn, "idempotencyKey": idempotency_key}), later)

    def read(self, found: TurnAccepted | HasResponse | Mapping[str, Any]) -> Response[AnswerT | PendingT]:
        """A GET at the ``Location``: the answer as the POST would have given it (200), or 202 while
        the worker writes it, looked at again soon (``answered_later.POLL_S``)."""
        if isinstance(found, TurnAccepted):
            return self.response(found.as_response(polled=True), False)
        return self.response(dict(found) if isinstance(found, Mapping) else found.as_response(), False)


def accepted_turn_ended(
    kept: Mapping[str, Any], read: Callable[[], object], unanswered: Callable[[object], bool] = lambda found: False
) -> bool:
    """Whether a 202 kept under an ``Idempotency-Key`` no longer holds (``IdempotentCall``'s
    ``stale``): reading its turn now fails (a ``DomainError``: the worker gave it up, or it or its
    session is gone), or finds it ended ``unanswered``. Replayed, it would send a retrying client to
    a turn that will never be answered for the key's 24 h; instead the retry runs again. Any other
    kept answer holds."""
    if kept.get("status") != "pending":
        return False
    try:
        found = read()
    except DomainError:
        return True
    return unanswered(found)
