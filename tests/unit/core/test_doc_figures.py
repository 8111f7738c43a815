"""The test counts and times the docs state are the ones a run recorded (tests/support/suite_figures.json,
written by ``--suite-figures=record``), so none is remembered; and the unit suite is what its name says:
its recorded run took at most UNIT_CPU_BUDGET_S of CPU (every process of `make unit` counted)."""

from __future__ import annotations

import pytest

from devtools.doc_figures import DOCUMENTS, MARKED, UnknownFigure, disagreements, load_records, rewritten, value

# docs/local.md#the-tests states this budget; a recorded unit run past it fails here.
UNIT_CPU_BUDGET_S = 60


def test_every_marked_figure_of_the_docs_is_its_recorded_value() -> None:
    assert disagreements(load_records()) == [], (
        "run `make figures` (after recording the runs: make <suite> FIGURES=record)"
    )


def test_the_docs_mark_the_suites_counts_and_times() -> None:
    marked = {m.group(1) for document in DOCUMENTS for m in MARKED.finditer(document.read_text(encoding="utf-8"))}

    assert {"unit.tests", "unit.cpu", "unit.wall", "suites.tests"} <= marked


def test_the_recorded_unit_run_stays_within_its_cpu_budget() -> None:
    unit = load_records()["unit"]

    assert unit["failed"] == 0 and unit["tests"] > 1000
    assert unit["cpu_s"] <= UNIT_CPU_BUDGET_S, (
        f"make unit took {unit['cpu_s']} s of CPU: find the slow tests (--durations)"
    )


def test_figures_render_as_the_docs_write_them() -> None:
    records = {
        "unit": {
            "tests": 1305,
            "wall_s": 202.4,
            "cpu_s": 48.6,
            "workers": 2,
            "cores": 2,
            "recorded": "2026-11-28 20:10 UTC",
        }
    }
    text = "<!-- figure unit.tests -->?<!-- /figure --> tests in <!-- figure unit.wall -->?<!-- /figure -->"

    assert rewritten(text, records) == (
        "<!-- figure unit.tests -->1,305<!-- /figure --> tests in <!-- figure unit.wall -->3 min 22 s<!-- /figure -->"
    )
    assert value("unit.cpu", records) == "49 s" and value("unit.recorded", records) == "2026-11-28"
    with pytest.raises(UnknownFigure):
        value("integration.tests", records)
    with pytest.raises(UnknownFigure):
        value("all.tests", records)
