"""The answer of a route whose work may finish after its request (a chat message, an interview
turn): 200 with the answer, or 202 Accepted with where (``Location``) and when (``Retry-After``)
to read it, and ``Preference-Applied`` when the client's ``Prefer: respond-async`` asked for it
(``api.prefer``). Its OpenAPI answers are declared from the same two models, so the contract and
the answers cannot part.

The domain names where to read the answer as a path of this API's routes (``answerUrl``: ``/ai-agent/...``);
the 202 puts the stage or base path the request came through before it (``api.called_path``), in the
body field and the ``Location`` alike, so that both resolve against the URL the client called, and a
stored answer replayed for an ``Idempotency-Key`` points where the replaying request came from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Protocol, Self, TypeVar

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel

from .called_path import handed_out


class PendingView(Protocol):
    """A 202's answer model: it says when to look first."""

    @property
    def retry_after_seconds(self) -> int: ...

    @classmethod
    def model_validate(cls, obj: Any) -> Self: ...


class CalledThrough(Protocol):
    """The resolver answering the request: the stage or base path the client called through."""

    @property
    def called_base_path(self) -> str: ...


AnswerT = TypeVar("AnswerT", bound=BaseModel)
PendingT = TypeVar("PendingT", bound=PendingView)


@dataclass(frozen=True)
class NowOrLater(Generic[AnswerT, PendingT]):
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
