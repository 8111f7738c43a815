"""The scheduler's cohort marks (``nudges.scheduling.CohortMarks``) kept in memory: the fan-out
simulation's (``devtools.fanout_sim``), and the unit tests' stand-in for
``storage.nudges.DynamoCohortMarks`` (``tests.support.nudge_fakes``, whose contract test runs the
adapter's tests on it)."""

from __future__ import annotations


class MemoryCohortMarks:
    """The cohorts (zone, local date) a planned scheduler run has queued."""

    def __init__(self) -> None:
        self.marked: set[tuple[str, str]] = set()

    def queued(self, zone: str, local_date: str) -> bool:
        return (zone, local_date) in self.marked

    def mark(self, zone: str, local_date: str) -> None:
        self.marked.add((zone, local_date))
