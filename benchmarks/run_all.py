"""`make bench`: runs every ``benchmarks/*_bench.py`` module's ``main()`` in one process run,
prints each table, and writes the report to ``benchmarks/results/latest.md`` (the file docs/proof.md
quotes). Each benchmark measures its own baseline or peers in the same run, so the ratios hold on a
noisy shared machine even where the absolute times do not. ``benchmarks/README.md`` says what each
one measures and how long it takes.

How it works, and why: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import re
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "latest.md"
QUICK_RESULTS = HERE / "results" / "quick.md"
ORDER = [
    "cold_start_bench",
    "nudges_bench",
    "chat_bench",
    "judge_bench",
    "peers_bench",
    "real_speed_bench",
    "socket_bench",
    "browser_words_bench",
    "cost_bench",
]
# The benchmarks `make bench-quick` runs, each through its ``main_quick()``: under 5 minutes together
# on a 2-core machine, the peer table and a real-speed row among them (benchmarks/README.md).
QUICK = ["peers_bench", "real_speed_bench", "socket_bench"]
TITLE = "# Benchmark results"
QUICK_TITLE = "# Quick benchmark results (make bench-quick)"
QUICK_NOTE = (
    "Each benchmark in its quick mode: the same code paths, sides and peers as `make bench`, fewer "
    "samples (each section states its sizes). The full figures are in benchmarks/results/latest.md."
)


def discover() -> list[str]:
    found = sorted(path.stem for path in HERE.glob("*_bench.py"))
    return [name for name in ORDER if name in found] + [name for name in found if name not in ORDER]


def run_stamp() -> str:
    return f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')} on {sys.platform}, Python {sys.version.split()[0]}"


@dataclass(frozen=True)
class Finished:
    """One benchmark that ran to its end in this run: its printed tables and how long it took."""

    name: str
    elapsed_s: float
    output: str


def main() -> int:
    arguments = _arguments()
    quick: bool = arguments.quick
    universe = QUICK if quick else discover()
    only: list[str] = arguments.benchmarks
    unknown = [name for name in only if name not in universe]
    if unknown:
        kind = (
            "no quick mode (QUICK in benchmarks/run_all.py)" if quick else "no such benchmark (benchmarks/*_bench.py)"
        )
        _refuse(f"{kind}: {', '.join(unknown)}; choose from {', '.join(universe)}")
    chosen = [name for name in universe if not only or name in only]
    path = QUICK_RESULTS if quick else RESULTS
    stamp = run_stamp()
    finished, failed, interrupted = _run(chosen, "main_quick" if quick else "main")
    earlier = path.read_text(encoding="utf-8") if path.exists() else ""
    whole = not only and not failed and not interrupted
    if finished:
        report = merged_report(earlier, finished, universe, stamp, whole=whole, quick=quick)
        _write_atomically(path, report)
        print(f"\nwrote {path.relative_to(HERE.parent)}")
    if failed:
        kept = _sections(earlier)
        for name in failed:
            where = "keeps its earlier section" if name in kept else "has no section yet"
            print(f"{name} failed (traceback above); {path.name} {where}", file=sys.stderr)
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    if interrupted:
        return 130
    return 1 if failed else 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run_all",
        description="Runs the benchmarks and records their tables (benchmarks/README.md).",
    )
    parser.add_argument("benchmarks", nargs="*", help="only these (e.g. peers_bench); default: all of them")
    parser.add_argument("--quick", action="store_true", help="the quick subset into benchmarks/results/quick.md")
    return parser.parse_args(sys.argv[1:])


def _refuse(message: str) -> None:
    print(f"python -m benchmarks.run_all: {message}", file=sys.stderr)
    raise SystemExit(2)


def _run(chosen: list[str], entry: str) -> tuple[list[Finished], list[str], bool]:
    """Runs each benchmark's ``entry``; a failure (an exception, SystemExit, a failed import) is the
    benchmark's alone. Ctrl-C stops the run; what finished before it is still recorded."""
    finished: list[Finished] = []
    failed: list[str] = []
    run_started = time.perf_counter()
    for index, name in enumerate(chosen, start=1):
        tag = f"[bench {index}/{len(chosen)}] {name}"
        progress(f"{tag} starting ({_seconds(time.perf_counter() - run_started)} into the run)")
        print(f"\n=== {name} ===", flush=True)
        buffer = io.StringIO()
        started = time.perf_counter()
        outcome = "done"
        try:
            with Heartbeat(tag, started):
                module = importlib.import_module(f"benchmarks.{name}")
                with contextlib.redirect_stdout(_Tee(sys.stdout, buffer)):
                    getattr(module, entry)()
        except KeyboardInterrupt:
            progress(f"{tag} interrupted: the benchmarks that finished are recorded, this one is not")
            failed.append(name)
            return finished, failed, True
        except (Exception, SystemExit):  # a broken benchmark must not hide the others' figures
            traceback.print_exc()
            failed.append(name)
            outcome = "failed"
        elapsed = time.perf_counter() - started
        if outcome == "done":
            finished.append(Finished(name, elapsed, buffer.getvalue().rstrip()))
        progress(f"{tag} {outcome} in {_seconds(elapsed)} (run: {_seconds(time.perf_counter() - run_started)})")
    return finished, failed, False


def merged_report(
    earlier: str, finished: list[Finished], universe: list[str], stamp: str, *, whole: bool, quick: bool = False
) -> str:
    """The new report: this run's sections, and the earlier report's for every benchmark that did
    not finish in it (not chosen, or failed), unchanged. A whole run without a failure starts the
    report afresh; otherwise the header keeps the earlier run's date and each section of this run
    says it was rerun."""
    kept = {} if whole else _sections(earlier)
    fresh = {item.name: item for item in finished}
    carried = [name for name in universe if name in kept and name not in fresh]
    base = _base_stamp(earlier) if carried else stamp
    sections = []
    for name in universe:
        if name in fresh:
            item = fresh[name]
            rerun = f", rerun at {stamp}" if base != stamp else ""
            sections.append(f"## {name} ({item.elapsed_s:.1f} s{rerun})\n\n```\n{item.output}\n```\n")
        elif name in kept:
            sections.append(kept[name])
    missing = [name for name in universe if name not in fresh and name not in kept]
    header = [QUICK_TITLE if quick else TITLE, ""]
    if quick:
        header += [QUICK_NOTE, ""]
    header.append(_dates(base, sections))
    if missing:
        header.append(f"No figures yet: {', '.join(missing)}.")
    return "\n".join([*header, "", *sections]).rstrip() + "\n"


def _base_stamp(report: str) -> str | None:
    found = re.search(r"(?m)^Run at ([^;\n]*?)(?:;|\.$)", report)
    return found.group(1) if found else None


def _dates(base: str | None, sections: list[str]) -> str:
    """``Run at <base>; a, b rerun at <t1>; c rerun at <t2>.``, from the sections' headings."""
    reruns: dict[str, list[str]] = {}
    for text in sections:
        heading = text.split("\n", 1)[0]
        found = re.search(r", rerun at (.+)\)$", heading)
        if found:
            reruns.setdefault(found.group(1), []).append(heading.removeprefix("## ").split(" ", 1)[0])
    line = f"Run at {base}" if base else "From an earlier run (its date was not recorded)"
    for when in sorted(reruns):
        line += f"; {', '.join(reruns[when])} rerun at {when}"
    return line + "."


def _write_atomically(path: Path, text: str) -> None:
    """A run stopped mid-write leaves the earlier report, never half of a new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


HEARTBEAT_S = 15.0


def progress(line: str) -> None:
    """Progress goes to stderr: the tables on stdout stay what the report quotes."""
    print(line, file=sys.stderr, flush=True)


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value >= 10 else f"{value:.1f} s"


class Heartbeat:
    """Says every HEARTBEAT_S that a long benchmark is still running, so the run is never silent."""

    def __init__(self, tag: str, started: float) -> None:
        self._tag = tag
        self._started = started
        self._every_s = HEARTBEAT_S
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="bench-heartbeat", daemon=True)

    def _beat(self) -> None:
        while not self._stop.wait(self._every_s):
            progress(f"{self._tag} still running, {_seconds(time.perf_counter() - self._started)}")

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()


def _sections(text: str) -> dict[str, str]:
    """The ``## <benchmark> (...)`` sections of an earlier report, by benchmark name."""
    sections: dict[str, str] = {}
    for chunk in re.split(r"(?m)^## (?=\w+_bench \()", text)[1:]:
        name = chunk.split(" ", 1)[0]
        sections[name] = "## " + chunk.rstrip() + "\n"
    return sections


class _Tee(io.TextIOBase):
    def __init__(self, *streams: TextIO) -> None:
        self._streams = streams

    def write(self, text: str) -> int:
        for stream in self._streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self._streams:
            stream.flush()


if __name__ == "__main__":
    raise SystemExit(main())
