"""A LiveChannel that keeps what it was sent, per user, for the tests of what the use cases push."""

from __future__ import annotations

from lambda_agents.live import Frame, PushCounts


class RecordingChannel:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Frame]] = []

    def send(self, user_id: str, frame: Frame) -> None:
        self.sent.append((user_id, frame))

    def flush(self) -> None:
        return None

    def take_counts(self) -> PushCounts:
        return PushCounts()

    def of(self, user_id: str) -> list[Frame]:
        return [frame for user, frame in self.sent if user == user_id]
