"""SocketMessageFunction: the WebSocket API's ``sendMessage`` route, and ``$default`` for any
other message (docs/api.md#websocket; ``lambda_agents.api.socket_messages``).

A valid message goes to the chat's or the interview's use case, the same as the REST message
routes run, asked to answer later (``Prefer: respond-async``): the turn is stored and handed to
ChatAnswerFunction or InterviewTurnFunction, and the route answers ``accepted`` at once, with the
answer's ``seq``. The answer's words and its ``done`` reach every open connection of the user from
the function that writes it. So this function never waits on a model (a WebSocket route, too, ends
at 29 s) and never calls one: the queues are required. Only the use case a message names is built,
on its first message: a container that takes only chat messages never loads the interview's agents.

``clientMessageId`` is kept as the REST routes keep an ``Idempotency-Key`` (Powertools idempotency,
24 h, the same tables under a key of their own: ``lambda_agents.api.socket_retries``; a chat
message keeps its id, so deleting its session deletes the record): a resend answers the first
``accepted`` and makes no second turn; a turn that ended without its answer (the fallback answer, a
turn given up) is run again. Errors answer as ``error`` frames with the REST routes' codes.

Environment: the chat's (CHAT_TABLE and its settings, CHAT_ANSWERS_QUEUE_URL) and the
interview's (INTERVIEWS_TABLE and its settings, INTERVIEW_TURNS_QUEUE_URL), each idempotency
table by its own name (CHAT_IDEMPOTENCY_TABLE, INTERVIEW_IDEMPOTENCY_TABLE), the daily budget's
(USER_DAILY_TOKEN_BUDGET, USER_SPENDING_TABLE) and the socket's (CONNECTIONS_TABLE,
SOCKET_API_ENDPOINT).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from lambda_agents.api.identity import SocketCaller, socket_caller
from lambda_agents.api.socket_messages import (
    MessageRefused,
    accepted_frame,
    read_message,
    refusal_frame,
    route_answer,
)
from lambda_agents.api.socket_retries import SOCKET_CHAT, SOCKET_INTERVIEW, message_payload, once_per_message
from lambda_agents.composition import CompositionRoot
from lambda_agents.config import load_settings
from lambda_agents.live import LiveChannel, emit_push_counts
from lambda_agents.observability import logger, metrics
from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:  # imported with the first message: the REST parameter types cost a cold start ~0.1 s
    from lambda_agents.api.idempotency import IdempotentCall
    from lambda_agents.api.socket_bodies import SocketMessage


class SocketMessageSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    chat_idempotency_table: str = Field(alias="CHAT_IDEMPOTENCY_TABLE", min_length=1)
    interview_idempotency_table: str = Field(alias="INTERVIEW_IDEMPOTENCY_TABLE", min_length=1)
    # Required: a socket's message is always answered by the worker, never in this function.
    chat_answers_queue_url: str = Field(alias="CHAT_ANSWERS_QUEUE_URL", min_length=1)
    interview_turns_queue_url: str = Field(alias="INTERVIEW_TURNS_QUEUE_URL", min_length=1)


@dataclass
class Dependencies:
    settings: SocketMessageSettings
    overrides: dict[str, Any] = field(default_factory=dict)
    _sends: dict[str, IdempotentCall] = field(default_factory=dict)
    # The use cases' live channels: a turn not handed over (the queue failing) is answered here.
    channels: list[LiveChannel] = field(default_factory=list)

    def send(self, to: str) -> IdempotentCall:
        """The retry-safe send of the use case ``to`` names, built on its first message."""
        if to not in self._sends:
            build = _chat if to == "chat" else _interview
            self._sends[to], live = build(self.settings, self.overrides)
            self.channels.append(live)
        return self._sends[to]


def bootstrap(*, settings: SocketMessageSettings | None = None, **overrides: Any) -> Dependencies:
    """The function's composition root (``lambda_agents.composition``); ``overrides``: what the use
    cases' bootstraps take instead of the environment's (``model``)."""
    return Dependencies(settings or load_settings(SocketMessageSettings), dict(overrides))


dependencies = CompositionRoot(bootstrap)


def _environment(idempotency_table: str) -> dict[str, str]:
    return {**os.environ, "IDEMPOTENCY_TABLE": idempotency_table}


def _chat(settings: SocketMessageSettings, overrides: dict[str, Any]) -> tuple[IdempotentCall, LiveChannel]:
    from lambda_agents.api.turn_routes import accepted_turn_ended
    from lambda_agents.bootstrap.chat import chat_turns
    from lambda_agents.chat.answering import ProcessMessageInput
    from lambda_agents.chat.replies import ProcessMessageResult
    from lambda_agents.chat.settings import ChatEnvironment

    turns = chat_turns(load_settings(ChatEnvironment, _environment(settings.chat_idempotency_table)), **overrides)

    def run(turn: dict[str, Any]) -> dict[str, Any]:
        # The message keeps its id: deleting the session deletes the record kept under it.
        request = ProcessMessageInput(
            turn["sessionId"], turn["userId"], turn["message"], client_message_id=turn["idempotencyKey"]
        )
        return turns.execute(request, None, prefer_later=True).as_response()

    def ended(turn: dict[str, Any], kept: dict[str, Any]) -> bool:
        read = lambda: turns.read_answer(turn["userId"], turn["sessionId"], int(kept["answerSeq"]))  # noqa: E731
        return accepted_turn_ended(kept, read, lambda found: isinstance(found, ProcessMessageResult) and found.fallback)

    once = once_per_message(run, ended, settings.chat_idempotency_table, "message", SOCKET_CHAT)
    return once, turns.answering.live


def _interview(settings: SocketMessageSettings, overrides: dict[str, Any]) -> tuple[IdempotentCall, LiveChannel]:
    from lambda_agents.answered_later import TurnAccepted
    from lambda_agents.api.turn_routes import accepted_turn_ended
    from lambda_agents.bootstrap.interview import InterviewSettings, interview_service

    environment = _environment(settings.interview_idempotency_table)
    service, _ = interview_service(load_settings(InterviewSettings, environment), **overrides)

    def run(turn: dict[str, Any]) -> dict[str, Any]:
        record = once.record_id(turn)  # stored with the turn: a withdrawal deletes it
        accepted = service.post_message(
            turn["userId"],
            turn["sessionId"],
            turn["text"],
            None,
            idempotency_record=record,
            prefer_later=True,
        )
        if not isinstance(accepted, TurnAccepted):  # the queue is required: every turn goes to the worker
            raise RuntimeError("an interview turn by socket was answered in the request")
        return accepted.as_response()

    def ended(turn: dict[str, Any], kept: dict[str, Any]) -> bool:
        return accepted_turn_ended(
            kept, lambda: service.turn_outcome(turn["userId"], turn["sessionId"], kept["turnId"])
        )

    once = once_per_message(run, ended, settings.interview_idempotency_table, "text", SOCKET_INTERVIEW)
    return once, service.live


def _payload(caller: SocketCaller, message: SocketMessage) -> dict[str, Any]:
    text = {"message": message.message} if message.to == "chat" else {"text": message.text}
    return message_payload(caller.user_id, message.session_id, message.client_message_id, **text)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    metrics.add_metric(name="SocketMessages", unit=MetricUnit.Count, value=1)
    message = None
    try:
        message = read_message(event)
        caller = socket_caller(event)
        deps = dependencies()
        send = deps.send(message.to)
        send.register_lambda_context(context)
        try:
            answer = accepted_frame(message, send(_payload(caller, message)))
        finally:
            emit_push_counts(*deps.channels)
    except MessageRefused as refused:
        answer = refused.frame
    except Exception as error:
        answer = refusal_frame(error, message)
    if answer.type == "error":
        metrics.add_metric(name="SocketMessagesRefused", unit=MetricUnit.Count, value=1)
    return route_answer(answer)
