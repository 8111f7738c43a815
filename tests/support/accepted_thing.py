"""A domain's accepted turn as the chat's and the interview's are made (``answered_later.AcceptedTurn``),
for the tests of what they share: a thing of a session, read at ``/things/{session}/{thing}``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from lambda_agents.answered_later import AcceptedTurn


@dataclass(frozen=True)
class ThingAccepted(AcceptedTurn):
    session_id: str
    thing_id: str
    expected_s: float
    url_field: ClassVar[str] = "thingUrl"

    def path(self) -> str:
        return f"/things/{self.session_id}/{self.thing_id}"

    def ids(self) -> dict[str, Any]:
        return {"sessionId": self.session_id, "thingId": self.thing_id}
