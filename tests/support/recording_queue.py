"""A queue port that records what it was given: the chat's AnswerQueue (an answer written later)
and the interview's TurnQueue (a turn run later) each hand one message to a worker with ``send``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

Message = TypeVar("Message")


@dataclass
class RecordingQueue(Generic[Message]):
    """What was handed to the worker, in order; ``broken`` refuses every send, as an unreachable
    queue does."""

    sent: list[Message] = field(default_factory=list)
    broken: bool = False

    def send(self, message: Message) -> None:
        if self.broken:
            raise ConnectionError("the queue is unreachable")
        self.sent.append(message)
