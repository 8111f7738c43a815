"""A domain's accepted turn as the chat's and the interview's are made (``answered_later.TurnAccepted``),
for the tests of what they share: a thing of a session, read at ``/things/{session}/{thing}``."""

from __future__ import annotations

from lambda_agents.answered_later import TurnAccepted


def thing_accepted(session_id: str, thing_id: str, expected_s: float) -> TurnAccepted:
    ids = {"sessionId": session_id, "thingId": thing_id}
    return TurnAccepted(f"/things/{session_id}/{thing_id}", "thingUrl", ids, expected_s)
