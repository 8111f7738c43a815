"""The suites' figures, measured by the run that states them (docs/local.md#the-tests).

Every pytest run ends with one line of its figures: how many tests of each suite it ran, its wall
time and the CPU time of every process it took (pytest, its xdist workers, and the processes the
tests started and waited for; measured with ``resource.getrusage``, so a busy machine lengthens the
wall time, not the CPU time). With ``--suite-figures=record`` (``make unit FIGURES=record``, the
other suites' targets alike) a run that passed and ran its suites whole (the folders alone, nothing
deselected but the docker tests every run leaves out) writes them into ``suite_figures.json``,
beside this file, under the suite's name (``unit``...; ``suites`` for a run of all of them at once,
as ``make test`` runs them). ``make figures`` then rewrites the figures the docs mark from that file
(``devtools/doc_figures.py``), and a unit test keeps the two in step: no count or time in the docs
is remembered rather than measured.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from devtools.doc_figures import duration  # as the docs write a duration

# tests/<suite>: the four of `make test` and the live tests it collects and skips (tests/docker is
# `make test-sam-local`'s, left out of every other run).
SUITES = ("unit", "integration", "infrastructure", "tooling", "live")
FIGURES_FILE = Path(__file__).with_name("suite_figures.json")
TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
# The marker expression every run has (pyproject's addopts): anything else deselects tests.
DEFAULT_MARKERS = "not docker"
_WORKER_CPU = "suite_figures_cpu_s"


def cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def suite_of(nodeid: str) -> str | None:
    parts = nodeid.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" and parts[1] in SUITES else None


def whole_suites(args: list[str]) -> set[str] | None:
    """The suites the invocation's arguments name whole (a suite's folder, ``tests``, the root), or
    None when an argument is narrower (a file, a test, another folder)."""
    suites: set[str] = set()
    for argument in args or ["."]:
        path = (Path.cwd() / argument).resolve()
        if path in (ROOT, TESTS):
            suites.update(SUITES)
        elif path.parent == TESTS and path.name in SUITES:
            suites.add(path.name)
        else:
            return None
    return suites


class SuiteFigures:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.started = time.monotonic()
        self.outcomes: dict[str, str] = {}
        self.workers_cpu_s = 0.0
        self.workers = 0

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.outcomes[report.nodeid] = report.outcome
        elif report.when == "teardown" and report.failed:
            self.outcomes[report.nodeid] = "failed"

    def figures(self) -> dict[str, Any]:
        by_suite: dict[str, int] = {}
        for nodeid in self.outcomes:
            suite = suite_of(nodeid) or "other"
            by_suite[suite] = by_suite.get(suite, 0) + 1
        # Under xdist the workers report their own CPU (theirs and their children's); without it the
        # tests ran here and the processes they started are this one's children.
        others = self.workers_cpu_s if self.workers else cpu_seconds(resource.RUSAGE_CHILDREN)
        outcomes = list(self.outcomes.values())
        return {
            "tests": len(self.outcomes),
            "by_suite": dict(sorted(by_suite.items())),
            "passed": outcomes.count("passed"),
            "skipped": outcomes.count("skipped"),
            "failed": outcomes.count("failed"),
            "wall_s": round(time.monotonic() - self.started, 1),
            "cpu_s": round(cpu_seconds(resource.RUSAGE_SELF) + others, 1),
            "workers": self.workers or 1,
            "cores": os.cpu_count(),
            "load_average": [round(load, 1) for load in os.getloadavg()],
            "recorded": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "python": platform.python_version(),
            "command": " ".join(["pytest", *sys.argv[1:]]),
        }

    def key(self, figures: dict[str, Any], exitstatus: int) -> str | None:
        """The name the run's figures are recorded under, or None when they stand for no whole suite."""
        option = self.config.option
        narrowed = (
            option.keyword
            or (option.markexpr or DEFAULT_MARKERS) != DEFAULT_MARKERS
            or option.deselect
            or option.ignore
            or option.ignore_glob
        )
        suites = whole_suites([str(argument) for argument in self.config.args])
        if exitstatus != 0 or figures["failed"] or narrowed or not suites:
            return None
        return "suites" if suites == set(SUITES) else "+".join(sorted(suites))

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int) -> None:
        figures = self.figures()
        if not figures["tests"]:
            return
        counted = ", ".join(f"{suite} {count:,}" for suite, count in figures["by_suite"].items())
        terminalreporter.write_line(
            f"figures: {figures['tests']:,} tests ({counted}) in {duration(figures['wall_s'])}, "
            f"{duration(figures['cpu_s'])} of CPU (every process of the run; {figures['workers']} running tests) "
            f"on {figures['cores']} cores"
        )
        if self.config.getoption("suite_figures") != "record":
            return
        key = self.key(figures, exitstatus)
        if key is None:
            terminalreporter.write_line(
                "figures: not recorded (a failure, or not whole suites: name their folders only)"
            )
            return
        recorded = json.loads(FIGURES_FILE.read_text(encoding="utf-8")) if FIGURES_FILE.exists() else {}
        recorded[key] = figures
        FIGURES_FILE.write_text(json.dumps(dict(sorted(recorded.items())), indent=2) + "\n", encoding="utf-8")
        where = FIGURES_FILE.relative_to(ROOT)
        terminalreporter.write_line(
            f"figures: recorded as {key!r} in {where}; `make figures` writes them into the docs"
        )


class WorkerNodes:
    """The xdist side: each worker's CPU reaches the controller when the worker ends."""

    def __init__(self, figures: SuiteFigures) -> None:
        self.figures = figures

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        self.figures.workers += 1
        self.figures.workers_cpu_s += float(getattr(node, "workeroutput", {}).get(_WORKER_CPU, 0.0))


RECORD_HELP = "record: write this run's counts and times into tests/support/suite_figures.json (whole suites only)"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--suite-figures", choices=("print", "record"), default="print", help=RECORD_HELP)


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: it reports to the controller
        return
    figures = SuiteFigures(config)
    config.pluginmanager.register(figures, "suite-figures")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(WorkerNodes(figures), "suite-figures-workers")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[_WORKER_CPU] = cpu_seconds(resource.RUSAGE_SELF) + cpu_seconds(resource.RUSAGE_CHILDREN)
