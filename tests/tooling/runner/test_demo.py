"""`make demo`'s harness: sections in order, skipped when absent, failures reported with exit 1."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from devtools import demo
from devtools.template import ROOT

pytestmark = pytest.mark.integration
FIXTURE_SECTIONS = "tests.tooling.runner.demo_fixture_sections"


def test_sections_run_in_order_absent_ones_are_skipped_and_a_failure_exits_1() -> None:
    out = io.StringIO()
    before = dict(os.environ)

    status = demo.main([], package=FIXTURE_SECTIONS, out=out)

    report = out.getvalue()
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
    done = subprocess.run(
        [sys.executable, "-m", "devtools.demo"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    last = done.stdout.rstrip().splitlines()[-1]
    assert last.startswith("demo: "), done.stdout + done.stderr
    assert "tables: ChatIdempotencyTable, ChatTable" in done.stdout  # created on the embedded server, not at :9
    # The report is for people: the functions' JSON logs go to the log file it names, not the terminal.
    printed = done.stdout.splitlines() + done.stderr.splitlines()
    assert not [line for line in printed if line.startswith('{"level"')], "function logs reached the terminal"
    named = [
        line.removeprefix("function logs: ") for line in done.stdout.splitlines() if line.startswith("function logs: ")
    ]
    assert len(named) == 1
    with open(named[0], encoding="utf-8") as log:
        assert sum(line.startswith('{"level"') for line in log) > 0
    os.unlink(named[0])
