"""The answer-queue fake and the audit check the chat unit tests share. The storage fakes
(``InMemoryChatStore``, ``CountingLimiter``) are in ``tests.support.memory_chat``, where the
contract tests hold them to the DynamoDB adapters' behaviour."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lambda_agents.chat.pending import PendingTurn


def no_text_in(record: dict[str, Any], *texts: str) -> bool:
    flat = repr(record)
    return not any(text and text in flat for text in texts)


@dataclass
class RecordingAnswerQueue:
    """The AnswerQueue port: what was handed to the worker; ``broken`` refuses every send."""

    sent: list[PendingTurn] = field(default_factory=list)
    broken: bool = False

    def send(self, turn: PendingTurn) -> None:
        if self.broken:
            raise ConnectionError("the queue is unreachable")
        self.sent.append(turn)
