"""`make demo`: the product run locally on embedded defaults, with no AWS, no key and no Docker.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import logging
import os
import sys
import tempfile
import time
import traceback
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from unittest import mock

from .local_aws import FAKE_CREDENTIALS, LocalAws
from .runner import LocalRunner
from .runner_api import STAGE, HttpRequest, RouteMatch, build_proxy_event
from .template import ROOT

SECTIONS = ("engine", "nudges", "chat", "judge", "interview")
SECTIONS_PACKAGE = "devtools.demo_sections"
# Never reach a real provider or a developer's own endpoints from the demo.
_SHELL_SETTINGS_IGNORED = ("OPENAI_", "AWS_ENDPOINT_URL", "AI_AGENT_MODE", "AWS_PROFILE")
DEMO_API_KEY = "demo-key-for-the-fake-server"
DEMO_PARAMETERS = {"NudgeFanoutMode": "batch_then_sync"}


def _display_width(text: str) -> int:
    """Columns a string takes in a terminal: East Asian wide characters take two."""
    return sum(2 if unicodedata.east_asian_width(char) in {"W", "F"} else 1 for char in text)


def _pad(text: str, width: int) -> str:
    return text + " " * (width - _display_width(text))


# A table line fits a 120-column terminal: a cell wider than its share wraps onto more lines.
TABLE_WIDTH = 120
_GAP = 2


def _wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` display columns, broken at spaces where there are
    any (a word longer than the width is broken inside)."""
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        candidate = f"{line} {word}" if line else word
        if _display_width(candidate) <= width:
            line = candidate
            continue
        if line:
            lines.append(line)
        rest = word
        while _display_width(rest) > width:
            cut = 0
            while _display_width(rest[: cut + 1]) <= width:
                cut += 1
            lines.append(rest[:cut])
            rest = rest[cut:]
        line = rest
    lines.append(line)
    return lines


def _column_widths(natural: list[int], total: int) -> list[int]:
    """Each column its natural width while the line fits ``total``; else the widest columns are
    narrowed to a common cap until it does (never below 12 columns)."""
    room = total - _GAP * (len(natural) - 1)
    cap = max(natural, default=0)
    while sum(min(width, cap) for width in natural) > room and cap > 12:
        cap -= 1
    return [min(width, cap) for width in natural]


@dataclass
class DemoContext:
    """What a section's ``run(ctx)`` gets."""

    runner: LocalRunner
    out: IO[str]
    log: IO[str]
    fake_openai: Any = None
    _overrides: dict[str, dict[str, str]] = field(default_factory=dict)

    # -- report -------------------------------------------------------------------------------

    def section(self, title: str, shows: str) -> None:
        """A section's title, then the one line that says what it shows, in words a newcomer reads."""
        self.out.write(f"\n{title}\n{'-' * _display_width(title)}\n{shows}\n")
        self.out.flush()

    def line(self, text: str = "") -> None:
        """One line of the report; a longer one than a terminal shows wraps, its rest indented."""
        if _display_width(text) <= TABLE_WIDTH:
            self.out.write(f"  {text}\n")
            self.out.flush()
            return
        first, *rest = _wrap(text, TABLE_WIDTH)
        rest = _wrap(" ".join(rest), TABLE_WIDTH - 2) if rest else []
        self.out.write("".join([f"  {first}\n", *(f"    {more}\n" for more in rest)]))
        self.out.flush()

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        cells = [[str(value) for value in row] for row in rows]
        natural = [
            max([_display_width(str(header))] + [_display_width(row[i]) for row in cells if i < len(row)])
            for i, header in enumerate(headers)
        ]
        widths = _column_widths(natural, TABLE_WIDTH)
        self._table_row([str(header) for header in headers], widths)
        self.line("  ".join("-" * width for width in widths))
        for row in cells:
            self._table_row(row, widths)

    def _table_row(self, row: Sequence[str], widths: Sequence[int]) -> None:
        wrapped = [_wrap(value, widths[i]) for i, value in enumerate(row)]
        for depth in range(max(len(lines) for lines in wrapped)):
            parts = [_pad(lines[depth] if depth < len(lines) else "", widths[i]) for i, lines in enumerate(wrapped)]
            self.line("  ".join(parts).rstrip())

    # -- the local AWS and the functions ------------------------------------------------------

    @property
    def dynamodb(self) -> Any:
        return self.runner.aws.client("dynamodb")

    @property
    def sqs(self) -> Any:
        return self.runner.sqs

    def openai_env(self) -> dict[str, str]:
        """Overrides that point a function's real openai client at the fake server."""
        if self.fake_openai is None:
            raise RuntimeError("the fake OpenAI server is not available (devtools/fake_openai.py missing)")
        return {"AI_AGENT_MODE": "openai", "OPENAI_BASE_URL": self.fake_openai.base_url, "OPENAI_API_KEY": DEMO_API_KEY}

    def env_for(self, logical_id: str) -> dict[str, str]:
        """The function's environment from the template, local overrides and this demo's overrides."""
        return {**self.runner.environment_for(logical_id), **self._overrides.get(logical_id, {})}

    def use_function(self, logical_id: str, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
        """Apply the function's environment to os.environ (until the section ends), for code
        that builds the function's services directly; ``overrides`` also apply to ``invoke``.
        Handlers cache what they build from the environment: clear those caches after
        switching a function between mock and openai."""
        if overrides:
            self._overrides.setdefault(logical_id, {}).update(overrides)
        env = self.env_for(logical_id)
        os.environ.update(env)
        return env

    def invoke(self, logical_id: str, event: Any) -> Any:
        """Invoke the handler like Lambda; its logs and metrics go to the demo's log."""
        with contextlib.redirect_stdout(self.log):
            return self.runner.invoke(logical_id, event, env_overrides=self._overrides.get(logical_id))

    # -- the API, called as a deployed client calls it ----------------------------------------

    @staticmethod
    def request(
        method: str, path: str, body: Any = None, headers: Sequence[tuple[str, str]] = (), query: str = ""
    ) -> HttpRequest:
        """A request on the stage URL (``/v1/...``); a URL the API handed out (a 202's ``Location``)
        already is one."""
        called = path if path.startswith(f"/{STAGE}/") else f"/{STAGE}{path}"
        payload = b"" if body is None else json.dumps(body, ensure_ascii=False).encode()
        return HttpRequest(method, called, query, [("Content-Type", "application/json"), *headers], payload)

    def http(self, request: HttpRequest) -> tuple[int, Any]:
        """The status and JSON body through the runner's HTTP front door; logs go to the demo's log."""
        with contextlib.redirect_stdout(self.log):
            response = self.runner.handle_http(request)
        return response.status, json.loads(response.body or b"null")

    def proxy_event(self, request: HttpRequest) -> tuple[str, dict[str, Any]]:
        """The function the request reaches and API Gateway's event for it, for ``invoke`` (which
        applies this section's environment overrides)."""
        entrance = self.runner.entrances.of(request.path)
        match = self.runner.routes.match(request.method, entrance.route_path(request.path))
        if not isinstance(match, RouteMatch):
            raise RuntimeError(f"no route for {request.method} {request.path}")
        return match.route.function_id, build_proxy_event(match, request, entrance)


@dataclass
class SectionOutcome:
    name: str
    status: str  # "passed" | "failed" | "skipped"
    seconds: float = 0.0


def _section_exists(package: str, name: str) -> bool:
    module = importlib.import_module(package)
    return any((Path(directory) / f"{name}.py").is_file() for directory in module.__path__)


def run_sections(ctx: DemoContext, names: Sequence[str], package: str = SECTIONS_PACKAGE) -> list[SectionOutcome]:
    outcomes = []
    for name in names:
        if not _section_exists(package, name):
            ctx.out.write(f"\n[{name}] not present yet, skipped\n")
            outcomes.append(SectionOutcome(name, "skipped"))
            continue
        started = time.monotonic()
        try:
            with mock.patch.dict(os.environ):
                module = importlib.import_module(f"{package}.{name}")
                module.run(ctx)
        except Exception:
            ctx.out.write(f"\n[{name}] FAILED\n{traceback.format_exc()}")
            outcomes.append(SectionOutcome(name, "failed", time.monotonic() - started))
        else:
            outcomes.append(SectionOutcome(name, "passed", time.monotonic() - started))
        ctx._overrides.clear()
    return outcomes


def summary_line(outcomes: Sequence[SectionOutcome], seconds: float) -> str:
    counts = {status: sum(1 for o in outcomes if o.status == status) for status in ("passed", "failed", "skipped")}
    timings = ", ".join(f"{o.name} {o.seconds:.1f}s" for o in outcomes if o.status != "skipped")
    detail = f" ({timings})" if timings else ""
    return (
        f"demo: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped "
        f"in {seconds:.1f}s{detail}"
    )


def _offline_process_environment(endpoint_dynamodb: str, endpoint_sqs: str, region: str, endpoint_events: str) -> None:
    """The demo process's own environment: local endpoints, fake credentials, the offline model."""
    for name in list(os.environ):
        if name.startswith(_SHELL_SETTINGS_IGNORED):
            del os.environ[name]
    os.environ.update(FAKE_CREDENTIALS)
    os.environ.update(
        {
            "AWS_REGION": region,
            "AWS_DEFAULT_REGION": region,
            "AWS_ENDPOINT_URL_DYNAMODB": endpoint_dynamodb,
            "AWS_ENDPOINT_URL_SQS": endpoint_sqs,
            "AWS_ENDPOINT_URL_EVENTBRIDGE": endpoint_events,
            "AI_AGENT_MODE": "mock",
            "POWERTOOLS_METRICS_NAMESPACE": "LambdaAgents",
        }
    )


def _fake_openai_server() -> Any:
    try:
        from .fake_openai import FakeOpenAIServer  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    return FakeOpenAIServer()


@contextlib.contextmanager
def _console_kept_for_the_report(report: IO[str], log: IO[str]) -> Iterator[IO[str]]:
    """Yield the stream the report goes to, and send everything else written to the console
    while the sections run (EMF metric lines Powertools prints, the runner's own notes, warnings,
    whatever a function or a child process writes to file descriptor 1 or 2) to ``log``: the
    console shows the report alone. When ``report`` is this process's stdout it is written
    through a copy of the terminal's descriptor taken before the redirection."""
    for stream in (sys.stdout, sys.stderr, report, log):
        stream.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    kept = report
    if report is sys.stdout:
        kept = os.fdopen(os.dup(saved[1]), "w", encoding="utf-8", buffering=1)
    to_log = log.fileno()
    python_streams = (sys.stdout, sys.stderr)
    try:
        for fd in (1, 2):
            if fd != to_log:  # --verbose: the log is stderr itself
                os.dup2(to_log, fd)
        sys.stdout = sys.stderr = log
        yield kept
    finally:
        log.flush()
        sys.stdout, sys.stderr = python_streams
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        if kept is not report:
            kept.close()


@contextlib.contextmanager
def _functions_logging_to(log: IO[str]) -> Iterator[None]:
    """Send the shared Powertools logger to the demo's log, then back. It keeps the stream it was
    created with (stdout), and the runner has imported it long before a section starts, so
    redirecting stdout around an import is not enough: the handler's stream itself is switched."""
    handler = importlib.import_module("lambda_agents.observability").logger.registered_handler
    if not isinstance(handler, logging.StreamHandler):
        yield
        return
    previous = handler.stream
    handler.setStream(log)
    try:
        yield
    finally:
        handler.setStream(previous)


def _opening(with_fake: bool, tables: Sequence[str]) -> list[str]:
    """What the demo is and where it runs, before its first section."""
    model = (
        "a fake OpenAI-compatible server played through the real openai client"
        if with_fake
        else ("no fake OpenAI server yet (devtools/fake_openai.py is missing)")
    )
    return [
        "Lambda Agents demo: every system of the bundle run through its real handlers on this machine,",
        f"  with no AWS account, no key and no Docker: AWS is an embedded moto server ({len(tables)} tables),",
        f"  the model is the offline model or {model}.",
        "  Function logs and metrics go to the log file named at the end; this screen is the report.",
    ]


def main(argv: Sequence[str] | None = None, *, package: str = SECTIONS_PACKAGE, out: IO[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("sections", nargs="*", default=list(SECTIONS), help=f"default: {' '.join(SECTIONS)}")
    parser.add_argument("--verbose", action="store_true", help="function logs to stderr instead of a log file")
    args = parser.parse_args(argv)
    report = out or sys.stdout
    started = time.monotonic()
    log_path = None
    if args.verbose:
        log: IO[str] = sys.stderr
    else:
        handle, log_path = tempfile.mkstemp(prefix="lambda-agents-demo-", suffix=".log")
        log = os.fdopen(handle, "w", encoding="utf-8")
    with mock.patch.dict(os.environ), LocalAws(force_embedded=True) as aws:
        endpoints = aws.endpoints
        _offline_process_environment(endpoints.dynamodb, endpoints.sqs, endpoints.region, endpoints.events)
        # The Batch API fan-out's function is deployed too (the nudges section runs it once).
        runner = LocalRunner(environ=dict(os.environ), local_aws=aws, parameter_overrides=DEMO_PARAMETERS).start()
        for layer in {layer for spec in runner.functions.values() for layer in spec.layer_dirs}:
            if str(ROOT / layer) not in sys.path:
                sys.path.insert(0, str(ROOT / layer))
        fake = _fake_openai_server()
        with (
            _console_kept_for_the_report(report, log) as console,
            _functions_logging_to(log),
            fake if fake is not None else contextlib.nullcontext(),
        ):
            ctx = DemoContext(runner=runner, out=console, log=log, fake_openai=fake)
            for line in _opening(fake is not None, sorted(aws.client("dynamodb").list_tables()["TableNames"])):
                console.write(f"{line}\n")
            outcomes = run_sections(ctx, args.sections, package)
    if log is not sys.stderr:
        log.close()
    report.write("\n")
    if log_path and os.path.getsize(log_path) == 0:
        os.unlink(log_path)
    elif log_path:
        report.write(f"function logs: {log_path}\n")
    report.write(summary_line(outcomes, time.monotonic() - started) + "\n")
    report.flush()
    return 1 if any(outcome.status == "failed" for outcome in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
