"""`make bench`: runs every ``benchmarks/*_bench.py`` module's ``main()`` in one process run,
prints each table, and writes the whole report to ``benchmarks/results/latest.md`` (the file
the README quotes). Each benchmark measures its own baseline or peers in the same run, so the
ratios hold on a noisy shared machine even where the absolute times do not.

``python -m benchmarks.run_all peers_bench ...`` runs only the named benchmarks and replaces
their sections of ``latest.md``, keeping the others' figures from the run that made them."""

from __future__ import annotations

import contextlib
import importlib
import io
import re
import sys
import threading
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "latest.md"
ORDER = ["cold_start_bench", "nudges_bench", "chat_bench", "judge_bench", "peers_bench", "real_speed_bench"]


def discover() -> list[str]:
    found = sorted(path.stem for path in HERE.glob("*_bench.py"))
    return [name for name in ORDER if name in found] + [name for name in found if name not in ORDER]


def main() -> int:
    only = set(sys.argv[1:])
    stamp = f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')} on {sys.platform}, Python {sys.version.split()[0]}"
    report = [f"# Benchmark results\n\nRun at {stamp}.\n"]
    earlier = RESULTS.read_text(encoding="utf-8") if only and RESULTS.exists() else ""
    kept = _sections(earlier)
    if kept:
        first_run = re.search(r"(?m)^Run at ([^;\n]*?)(?:;|\.$)", earlier)
        since = f"Run at {first_run.group(1)}" if first_run else "From an earlier run"
        report = [f"# Benchmark results\n\n{since}; {', '.join(sorted(only))} rerun at {stamp}.\n"]
    failed = []
    chosen = [name for name in discover() if not only or name in only]
    run_started = time.perf_counter()
    for name in discover():
        if only and name not in only:
            if name in kept:
                report.append(kept[name])
            continue
        index = chosen.index(name) + 1
        tag = f"[bench {index}/{len(chosen)}] {name}"
        progress(f"{tag} starting ({_seconds(time.perf_counter() - run_started)} into the run)")
        print(f"\n=== {name} ===", flush=True)
        buffer = io.StringIO()
        started = time.perf_counter()
        try:
            with Heartbeat(tag, started):
                module = importlib.import_module(f"benchmarks.{name}")
                with contextlib.redirect_stdout(_Tee(sys.stdout, buffer)):
                    module.main()
        except Exception:  # a broken benchmark must not hide the others' figures
            failed.append(name)
            traceback.print_exc()
            buffer.write("\n(failed: see the console for the traceback)\n")
        elapsed = time.perf_counter() - started
        outcome = "failed" if name in failed else "done"
        progress(f"{tag} {outcome} in {_seconds(elapsed)} (run: {_seconds(time.perf_counter() - run_started)})")
        rerun = f", rerun at {stamp}" if kept else ""
        report.append(f"## {name} ({elapsed:.1f} s{rerun})\n\n```\n{buffer.getvalue().rstrip()}\n```\n")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(report), encoding="utf-8")
    print(f"\nwrote {RESULTS.relative_to(HERE.parent)}")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


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
    def __init__(self, *streams: io.TextIOBase | object) -> None:
        self._streams = streams

    def write(self, text: str) -> int:
        for stream in self._streams:
            stream.write(text)  # type: ignore[attr-defined]
        return len(text)

    def flush(self) -> None:
        for stream in self._streams:
            stream.flush()  # type: ignore[attr-defined]


if __name__ == "__main__":
    raise SystemExit(main())
