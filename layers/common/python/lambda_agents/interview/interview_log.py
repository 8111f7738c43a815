"""The agents' log (docs/interview.md#logging): debug/info/warn/error with a context (agent,
sessionId, tool), written through the shared Powertools logger.

Where it logs: the Orchestrator (workflow start, agent transitions, message processing), BaseAgent
(tool executions, LLM calls, loop iterations), each agent's own events. Policy: no applicant or
assistant text at INFO, only names, ids, counts and outcomes; message text may appear at DEBUG only.
Tests pass a ``RecordingLog`` instead (it keeps the records for the test to read, and is a no-op
when nobody does), so no test needs to patch the Powertools logger.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..observability import logger


class InterviewLog(Protocol):
    def debug(self, message: str, **context: Any) -> None: ...

    def info(self, message: str, **context: Any) -> None: ...

    def warn(self, message: str, **context: Any) -> None: ...

    def error(self, message: str, **context: Any) -> None: ...


class PowertoolsInterviewLog:
    """The production log: Powertools structured JSON, context keys as top-level fields."""

    def debug(self, message: str, **context: Any) -> None:
        logger.debug(message, extra=context)

    def info(self, message: str, **context: Any) -> None:
        logger.info(message, extra=context)

    def warn(self, message: str, **context: Any) -> None:
        logger.warning(message, extra=context)

    def error(self, message: str, **context: Any) -> None:
        logger.error(message, extra=context)


@dataclass
class RecordingLog:
    """Keeps (level, message, context) tuples: for tests, and as a no-op when nobody reads them."""

    records: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    def debug(self, message: str, **context: Any) -> None:
        self.records.append(("debug", message, context))

    def info(self, message: str, **context: Any) -> None:
        self.records.append(("info", message, context))

    def warn(self, message: str, **context: Any) -> None:
        self.records.append(("warn", message, context))

    def error(self, message: str, **context: Any) -> None:
        self.records.append(("error", message, context))

    def messages(self, level: str | None = None) -> list[str]:
        return [message for lvl, message, _ in self.records if level is None or lvl == level]
