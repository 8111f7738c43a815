"""`make bench`: runs every ``benchmarks/*_bench.py`` module's ``main()`` in one process run,
prints each table, and writes the whole report to ``benchmarks/results/latest.md`` (the file
the README quotes). Each benchmark measures its own baseline or peers in the same run, so the
ratios hold on a noisy shared machine even where the absolute times do not."""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "latest.md"
ORDER = ["cold_start_bench", "nudges_bench", "chat_bench", "judge_bench", "peers_bench"]


def discover() -> list[str]:
    found = sorted(path.stem for path in HERE.glob("*_bench.py"))
    return [name for name in ORDER if name in found] + [name for name in found if name not in ORDER]


def main() -> int:
    only = set(sys.argv[1:])
    report = [
        f"# Benchmark results\n\nRun at {time.strftime('%Y-%m-%d %H:%M:%S %Z')} on {sys.platform}, "
        f"Python {sys.version.split()[0]}.\n"
    ]
    failed = []
    for name in discover():
        if only and name not in only:
            continue
        print(f"\n=== {name} ===", flush=True)
        buffer = io.StringIO()
        started = time.perf_counter()
        try:
            module = importlib.import_module(f"benchmarks.{name}")
            with contextlib.redirect_stdout(_Tee(sys.stdout, buffer)):
                module.main()
        except Exception:  # a broken benchmark must not hide the others' figures
            failed.append(name)
            traceback.print_exc()
            buffer.write("\n(failed: see the console for the traceback)\n")
        elapsed = time.perf_counter() - started
        report.append(f"## {name} ({elapsed:.1f} s)\n\n```\n{buffer.getvalue().rstrip()}\n```\n")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(report), encoding="utf-8")
    print(f"\nwrote {RESULTS.relative_to(HERE.parent)}")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


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
