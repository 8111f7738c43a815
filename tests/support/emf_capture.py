"""The metrics the functions really emit, recorded from every EMF line their handlers print in the
tests, and the catalog of them (``tests/support/emitted_metrics.json``) that the template's alarms
and dashboard are held to (``test_cloudwatch_reads_what_the_code_emits.py``).

A pytest plugin (tests/conftest.py loads it in every session):

- A handler invoked by a test runs with its function's metric environment from template.yaml, as in
  Lambda: POWERTOOLS_SERVICE_NAME and POWERTOOLS_METRICS_NAMESPACE for the call (the shared
  ``metrics`` too), so Powertools adds the function's ``service`` to every metric itself. The
  decorator every handler wears, ``Metrics.log_metrics``, is wrapped for that; the local runner
  sets the same environment for the functions it runs.
- Every EMF document Powertools prints (its ``print`` in the two modules that print them) is read
  as the metrics CloudWatch would make of it. Only metrics in the template's namespace count: a
  line printed outside a handler (an engine test) is no function's output.
- ``--emf-catalog=write`` writes what the session recorded to the catalog (``make metrics-catalog``:
  the integration and tooling suites, one process), which the template test reads in any run. After
  a full run of both suites (one process, nothing deselected, nothing failed) the template's alarms
  and dashboard are also held to what that run's handlers emitted, so a metric the code stopped
  emitting cannot pass on an old catalog's word; the session fails otherwise. Metrics emitted but not
  listed, or listed but not met (a breaker opens under some timings only), are noted in the summary.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from devtools.cloudwatch_rules import MetricSeries, emf_documents, series_of
from devtools.runner_lambda import applied_environment
from devtools.template import ROOT, load_template
from tests.support.cloudwatch_queries import unmatched

CATALOG = Path(__file__).with_name("emitted_metrics.json")
SUITES = ("tests/integration", "tests/tooling")  # the suites that run the handlers
_PRINTING_MODULES = (
    "aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch",  # Metrics' flush
    "aws_lambda_powertools.metrics.base",  # single_metric
)


def template_namespace() -> str:
    return str(load_template()["Globals"]["Function"]["Environment"]["Variables"]["POWERTOOLS_METRICS_NAMESPACE"])


def function_services() -> dict[str, str]:
    """Each function's code folder (``functions/chat``) -> its POWERTOOLS_SERVICE_NAME."""
    services = {}
    for body in load_template()["Resources"].values():
        if body["Type"] != "AWS::Serverless::Function":
            continue
        properties = body["Properties"]
        service = properties["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"]
        services[str(properties["CodeUri"]).strip("/")] = str(service)
    return services


def _service_of(handler: Callable[..., Any]) -> str | None:
    """The POWERTOOLS_SERVICE_NAME of the function whose handler this is (its code folder or
    its ``sam build`` artifact), None for a handler of no function of the template."""
    try:
        path = Path(inspect.getfile(inspect.unwrap(handler))).resolve()
        relative = path.parent.relative_to(ROOT)
    except (TypeError, ValueError):
        return None
    services = function_services()
    if str(relative) in services:
        return services[str(relative)]
    if relative.parent == Path(".aws-sam/build"):  # .aws-sam/build/<LogicalId>/app.py
        code_uri = load_template()["Resources"].get(relative.name, {}).get("Properties", {}).get("CodeUri", "")
        return services.get(str(code_uri).strip("/"))
    return None


@contextmanager
def _function_environment(metrics: Any, service: str) -> Iterator[None]:
    namespace = template_namespace()
    variables = {"POWERTOOLS_SERVICE_NAME": service, "POWERTOOLS_METRICS_NAMESPACE": namespace}
    saved = (metrics.service, metrics.namespace)
    metrics.service, metrics.namespace = service, namespace
    try:
        with applied_environment(variables):
            yield
    finally:
        metrics.service, metrics.namespace = saved


class EmfRecorder:
    """The metrics recorded in this process, as catalog keys."""

    def __init__(self) -> None:
        self.seen: set[MetricSeries] = set()
        self._namespace = template_namespace()
        self._services = set(function_services().values())
        self._undo: list[Callable[[], None]] = []

    def record(self, text: str) -> None:
        """Keep the metrics of a function of the template: its namespace and one of its services
        (a line printed outside any handler, or by a test's own fixture app, is neither)."""
        for document in emf_documents([text]):
            for series, _ in series_of(document):
                if series.namespace == self._namespace and series.value("service") in self._services:
                    self.seen.add(catalog_key(series))

    def install(self) -> None:
        import importlib

        from aws_lambda_powertools.metrics import metrics as metrics_module

        def recording_print(*args: Any, **kwargs: Any) -> None:
            builtins.print(*args, **kwargs)
            if args and isinstance(args[0], str):
                self.record(args[0])

        for name in _PRINTING_MODULES:
            module = importlib.import_module(name)
            module.print = recording_print  # type: ignore[attr-defined]
            self._undo.append(functools.partial(delattr, module, "print"))

        original = metrics_module.Metrics.log_metrics

        def log_metrics(metrics: Any, lambda_handler: Any = None, **kwargs: Any) -> Any:
            if lambda_handler is None:
                return functools.partial(log_metrics, metrics, **kwargs)
            decorated = original(metrics, lambda_handler, **kwargs)
            service = _service_of(lambda_handler)
            if service is None:
                return decorated

            @functools.wraps(decorated)
            def as_in_lambda(*args: Any, **call_kwargs: Any) -> Any:
                with _function_environment(metrics, service):
                    return decorated(*args, **call_kwargs)

            return as_in_lambda

        metrics_module.Metrics.log_metrics = log_metrics  # type: ignore[method-assign]
        self._undo.append(functools.partial(setattr, metrics_module.Metrics, "log_metrics", original))

    def uninstall(self) -> None:
        while self._undo:
            self._undo.pop()()


ANY_VALUE = "*"


def catalog_key(series: MetricSeries) -> MetricSeries:
    """A metric as the catalog lists it: every dimension named, the value kept for ``service`` only.
    The others' values (a fallback's cause, a judgment's method, a model) depend on which faults a
    run happened to meet; a query names them by a SEARCH schema, never by value."""
    dimensions = tuple((name, value if name == "service" else ANY_VALUE) for name, value in series.dimensions)
    return MetricSeries(series.namespace, series.name, dimensions)


def to_entry(series: MetricSeries) -> dict[str, Any]:
    return {"namespace": series.namespace, "metric": series.name, "dimensions": dict(series.dimensions)}


def from_entry(entry: dict[str, Any]) -> MetricSeries:
    return MetricSeries(entry["namespace"], entry["metric"], tuple(sorted(entry["dimensions"].items())))


def read_catalog(path: Path = CATALOG) -> set[MetricSeries]:
    if not path.exists():
        return set()
    return {from_entry(entry) for entry in json.loads(path.read_text(encoding="utf-8"))}


def write_catalog(seen: set[MetricSeries], path: Path = CATALOG) -> None:
    lines = [json.dumps(to_entry(series), ensure_ascii=False) for series in sorted(seen)]
    path.write_text("[\n" + ",\n".join(lines) + "\n]\n", encoding="utf-8")  # one metric a line: diffs read well


# -- the plugin ------------------------------------------------------------------------------------

_RECORDER = EmfRecorder()
_STATE: dict[str, Any] = {"full": False, "deselected": False, "problems": [], "notes": []}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--emf-catalog",
        choices=("check", "write"),
        default="check",
        help="write: rewrite tests/support/emitted_metrics.json from the metrics this session's handlers emitted",
    )


def _distributed(config: pytest.Config) -> bool:
    """pytest-xdist runs the tests in workers: this process (the controller) sees none of their prints."""
    return hasattr(config, "workerinput") or bool(getattr(config.option, "numprocesses", None))


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("emf_catalog") == "write" and _distributed(config):
        raise pytest.UsageError("--emf-catalog=write needs a one-process run (no -n)")
    _RECORDER.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    _RECORDER.uninstall()


def pytest_deselected(items: list[pytest.Item]) -> None:
    _STATE["deselected"] = True


def pytest_collection_finish(session: pytest.Session) -> None:
    # A full run: every test file of the suites that run handlers was collected, none deselected.
    collected = {Path(item.path).resolve() for item in session.items}
    files = {path.resolve() for suite in SUITES for path in (ROOT / suite).rglob("test_*.py")}
    _STATE["full"] = files <= collected and not _STATE["deselected"]


def findings(
    seen: set[MetricSeries], catalog: set[MetricSeries], *, complete: bool, template: dict[str, Any]
) -> tuple[list[str], list[str]]:
    """(problems that fail the session, notes) at the end of a session that recorded ``seen``."""
    notes = [f"emitted, not listed (make metrics-catalog): {json.dumps(to_entry(s))}" for s in sorted(seen - catalog)]
    if not complete:
        return [], notes
    # The list is a record of an earlier run: here the template is held to what this run's
    # handlers emitted, so a metric the code stopped emitting cannot pass on the list's word.
    problems = unmatched(template, seen)
    notes += [f"listed, not emitted in this run: {json.dumps(to_entry(s))}" for s in sorted(catalog - seen)]
    return ([*problems, "(against the metrics this full run's handlers emitted)"] if problems else []), notes


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if _distributed(config):
        return  # checked in one-process runs (make integration, make test)
    if config.getoption("emf_catalog") == "write":
        write_catalog(_RECORDER.seen)
        return
    ran = not config.getoption("collectonly") and session.testscollected > 0
    complete = ran and _STATE["full"] and session.testsfailed == 0 and not session.shouldfail and not session.shouldstop
    problems, notes = findings(_RECORDER.seen, read_catalog(), complete=complete, template=load_template())
    _STATE["problems"], _STATE["notes"] = problems, notes
    if problems:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _STATE["problems"] or _STATE["notes"]:
        terminalreporter.section("emitted metrics (tests/support/emf_capture.py)")
        for line in [*_STATE["problems"], *_STATE["notes"]]:
            terminalreporter.line(line)
