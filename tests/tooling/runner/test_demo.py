"""`make demo`'s harness: sections in order, skipped when absent, failures reported with exit 1."""

from __future__ import annotations

import io
import os
import sys

import pytest

from devtools import demo
from devtools.template import ROOT
from tests.support.commands import run_command

pytestmark = pytest.mark.integration
FIXTURE_SECTIONS = "tests.tooling.runner.demo_fixture_sections"


def _raw_json_lines(lines: list[str]) -> list[str]:
    """Lines that are a JSON object, as a function's log or an EMF metric line is."""
    return [line for line in lines if line.lstrip().startswith("{")]


def test_sections_run_in_order_absent_ones_are_skipped_and_a_failure_exits_1(capfd: pytest.CaptureFixture[str]) -> None:
    out = io.StringIO()
    before = dict(os.environ)

    status = demo.main([], package=FIXTURE_SECTIONS, out=out)

    report = out.getvalue()
    console = capfd.readouterr()
    # What the section printed (print, a descriptor write, stderr) reached neither the report nor the
    # console, only the log the report names.
    assert _raw_json_lines(report.splitlines() + console.out.splitlines() + console.err.splitlines()) == []
    [log_path] = [
        line.removeprefix("function logs: ") for line in report.splitlines() if line.startswith("function logs: ")
    ]
    with open(log_path, encoding="utf-8") as log:
        logged = log.read()
    os.unlink(log_path)
    assert '"FixtureMetric"' in logged and "fixture fd write" in logged and "fixture stderr" in logged
    assert "Fixture engine section\n----------------------\nA section that passes.\n" in report
    assert status == 1
    assert report.index("Fixture engine section") < report.index("[nudges] not present yet, skipped")
    assert report.index("[nudges]") < report.index("Fixture chat section") < report.index("[judge] not present")
    assert "ChatTable   1      日本語の行" in report  # wide characters keep the columns aligned
    assert "RuntimeError: chat fixture broke on purpose" in report
    assert report.rstrip().splitlines()[-1].startswith("demo: 1 passed, 1 failed, 3 skipped in ")
    assert dict(os.environ) == before  # the demo leaves the process environment as it found it


def test_only_the_named_sections_run() -> None:
    out = io.StringIO()

    status = demo.main(["engine"], package=FIXTURE_SECTIONS, out=out)

    assert status == 0
    assert "Fixture chat section" not in out.getvalue()
    assert out.getvalue().rstrip().splitlines()[-1].startswith("demo: 1 passed, 0 failed, 0 skipped")


def test_make_demo_runs_offline_even_with_a_key_and_endpoints_in_the_shell() -> None:
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'layers/common/python'}:{ROOT}",
        "OPENAI_API_KEY": "sk-must-not-be-used",
        "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:9",
    }
    done = run_command([sys.executable, "-m", "devtools.demo"], env=env)

    # The report is for people: the functions' JSON logs and EMF metric lines go to the log file it
    # names, never the terminal.
    printed = done.stdout.splitlines() + done.stderr.splitlines()
    assert _raw_json_lines(printed) == [], "raw JSON lines reached the terminal"
    last = done.stdout.rstrip().splitlines()[-1]
    assert last.startswith("demo: 5 passed"), done.stdout + done.stderr
    assert max(demo._display_width(line) for line in done.stdout.splitlines()) <= 2 + demo.TABLE_WIDTH
    assert "an embedded moto server (11 tables)" in done.stdout  # created on the embedded server, not at :9
    named = [
        line.removeprefix("function logs: ") for line in done.stdout.splitlines() if line.startswith("function logs: ")
    ]
    assert len(named) == 1
    with open(named[0], encoding="utf-8") as log:
        logged = log.read().splitlines()
    os.unlink(named[0])
    assert sum(line.startswith('{"level"') for line in logged) > 0
    assert sum(line.startswith('{"_aws"') for line in logged) > 0  # the metrics too
    # Each section opens with its title, an underline, and one line that says what it shows.
    lines = done.stdout.splitlines()
    underlines = [index for index, line in enumerate(lines) if line and set(line) == {"-"} and index > 0]
    assert len(underlines) == 5
    for index in underlines:
        title, shows = lines[index - 1], lines[index + 1]
        assert len(lines[index]) == len(title) and shows.endswith(".") and not shows.startswith(" "), (title, shows)


def test_a_table_wider_than_a_terminal_wraps_its_cells_and_keeps_every_word() -> None:
    out = io.StringIO()
    ctx = demo.DemoContext(runner=None, out=out, log=io.StringIO())  # type: ignore[arg-type]
    long_cell = "truncated at 256 tokens, retried with 1,047: ok, " * 4
    rows = [["a case", long_cell, "1,303", "what it shows " * 6], ["回答は日本語で " * 8, "ok", "12", "short"]]

    ctx.table(["case", "what happened", "tokens billed", "what it shows"], rows)

    lines = out.getvalue().splitlines()
    assert max(demo._display_width(line) for line in lines) <= 2 + demo.TABLE_WIDTH
    assert len(lines) > 2 + len(rows)  # wrapped onto more lines than rows
    words = " ".join(lines).split()
    for cell in [*rows[0], *rows[1]]:
        for word in cell.split():
            assert word in words
