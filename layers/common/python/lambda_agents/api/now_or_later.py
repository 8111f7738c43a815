"""The answer of a route whose work may finish after its request (a chat message, an interview
turn): 200 with the answer, or 202 Accepted with where (``Location``) and when (``Retry-After``)
to read it, and ``Preference-Applied`` when the client's ``Prefer: respond-async`` asked for it
(``api.prefer``). Its OpenAPI answers are declared from the same two models, so the contract and
the answers cannot part."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, Self, TypeVar

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel


class PendingView(Protocol):
    """A 202's answer model: it says when to look first."""

    @property
    def retry_after_seconds(self) -> int: ...

    @classmethod
    def model_validate(cls, obj: Any) -> Self: ...


AnswerT = TypeVar("AnswerT", bound=BaseModel)
PendingT = TypeVar("PendingT", bound=PendingView)


@dataclass(frozen=True)
class NowOrLater(Generic[AnswerT, PendingT]):
    """One route family's two answers: ``answered`` now, or ``pending`` at ``location`` of it.
    An answer is pending when its ``status`` says so, as a handed-over turn's answer does."""

    answered: type[AnswerT]
    pending: type[PendingT]
    location: Callable[[PendingT], str]
    answered_description: str
    pending_description: str

    @property
    def responses(self) -> dict[int, OpenAPIResponse]:
        return {
            200: {"description": self.answered_description, "content": {"application/json": {"model": self.answered}}},
            202: {"description": self.pending_description, "content": {"application/json": {"model": self.pending}}},
        }

    def response(self, answer: dict[str, Any], preference_applied: bool) -> Response[AnswerT | PendingT]:
        """200 with the answer, or 202 with where and when to read it."""
        if answer.get("status") != "pending":
            return Response(200, "application/json", self.answered.model_validate(answer))
        accepted = self.pending.model_validate(answer)
        headers = {"Location": self.location(accepted), "Retry-After": str(accepted.retry_after_seconds)}
        if preference_applied:
            headers["Preference-Applied"] = "respond-async"
        return Response(202, "application/json", accepted, headers=headers)
