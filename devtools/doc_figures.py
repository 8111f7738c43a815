"""The test counts and times the docs state, written from the runs that measured them.

    python -m devtools.doc_figures write    # `make figures`: rewrite every marked figure of the docs
    python -m devtools.doc_figures check    # exit 1 naming each figure the docs state otherwise

A figure in README.md or docs/*.md is marked ``<!-- figure unit.tests -->1,305<!-- /figure -->``: the
text between the marks is the figure's value as the record of that run renders it
(``tests/support/suite_figures.json``, which ``--suite-figures=record`` writes:
tests/support/suite_figures.py). Names: ``<run>.tests``, ``<run>.wall``, ``<run>.cpu``,
``<run>.workers``, ``<run>.cores``, ``<run>.recorded`` for a recorded run (``unit``, ``integration``,
``infrastructure``, ``tooling``, ``live``, ``suites``), and ``all.tests`` / ``all.wall`` /
``all.cpu``: the sums over the separately recorded suites.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .template import ROOT

FIGURES_FILE = ROOT / "tests" / "support" / "suite_figures.json"
DOCUMENTS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "README.md")
MARKED = re.compile(r"<!-- figure ([\w.]+) -->(.*?)<!-- /figure -->")
SEPARATE_SUITES = ("unit", "integration", "infrastructure", "tooling", "live")


class UnknownFigure(KeyError):
    """A marked figure no recorded run has."""


def duration(seconds: float) -> str:
    """``48 s`` or ``3 min 22 s``."""
    rounded = round(seconds)
    return f"{rounded} s" if rounded < 90 else f"{rounded // 60} min {rounded % 60} s"


def load_records(path: Path = FIGURES_FILE) -> dict[str, dict[str, Any]]:
    return dict(json.loads(path.read_text(encoding="utf-8"))) if path.exists() else {}


def value(name: str, records: Mapping[str, Mapping[str, Any]]) -> str:
    """The text of the figure ``name`` from ``records``."""
    run, _, field = name.partition(".")
    if run == "all":
        missing = [suite for suite in SEPARATE_SUITES if suite not in records]
        if missing:
            raise UnknownFigure(f"{name}: no record of {', '.join(missing)}")
        record: Mapping[str, Any] = {
            key: sum(records[suite][key] for suite in SEPARATE_SUITES) for key in ("tests", "wall_s", "cpu_s")
        }
    elif run in records:
        record = records[run]
    else:
        raise UnknownFigure(f"{name}: no recorded run {run!r} in {FIGURES_FILE.relative_to(ROOT)}")
    renderings = {
        "tests": lambda: f"{record['tests']:,}",
        "wall": lambda: duration(record["wall_s"]),
        "cpu": lambda: duration(record["cpu_s"]),
        "workers": lambda: str(record["workers"]),
        "cores": lambda: str(record["cores"]),
        "recorded": lambda: str(record["recorded"]).split(" ", 1)[0],
    }
    if field not in renderings or (run == "all" and field not in {"tests", "wall", "cpu"}):
        raise UnknownFigure(f"{name}: {field!r} is not a figure; figures: {', '.join(renderings)}")
    return renderings[field]()


def rewritten(text: str, records: Mapping[str, Mapping[str, Any]]) -> str:
    return MARKED.sub(lambda m: f"<!-- figure {m.group(1)} -->{value(m.group(1), records)}<!-- /figure -->", text)


def disagreements(records: Mapping[str, Mapping[str, Any]], documents: Sequence[Path] = DOCUMENTS) -> list[str]:
    """Each marked figure whose text is not its recorded value, as ``file: name says X, recorded Y``."""
    found = []
    for document in documents:
        for match in MARKED.finditer(document.read_text(encoding="utf-8")):
            recorded = value(match.group(1), records)
            if match.group(2) != recorded:
                where = document.relative_to(ROOT)
                found.append(f"{where}: {match.group(1)} says {match.group(2)!r}, recorded {recorded!r}")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.doc_figures", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("write", "check"))
    args = parser.parse_args(argv)
    records = load_records()
    try:
        if args.action == "check":
            wrong = disagreements(records)
            for line in wrong:
                print(line, file=sys.stderr)
            return 1 if wrong else 0
        for document in DOCUMENTS:
            text = document.read_text(encoding="utf-8")
            new = rewritten(text, records)
            if new != text:
                document.write_text(new, encoding="utf-8")
                print(f"rewrote the figures of {document.relative_to(ROOT)}", file=sys.stderr)
    except UnknownFigure as unknown:
        print(f"python -m devtools.doc_figures: error: {unknown.args[0]}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
