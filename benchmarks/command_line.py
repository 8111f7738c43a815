"""The command line every benchmark module shares (benchmarks/README.md, "The benchmarks").

``python -m benchmarks.<name> --help`` says what the benchmark measures (its module's docstring),
the options and environment settings it reads, where its figures go and how long it takes, and
runs nothing; an option it does not know is refused instead of ignored, so a mistyped flag never
starts a run of minutes.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path

RECORD_NOTE = (
    "Alone, it prints its tables; `python -m benchmarks.run_all {name}` records them in "
    "benchmarks/results/latest.md. What it measures, against what, and how long it takes: "
    "benchmarks/README.md, section `{name}`."
)


def benchmark_arguments(
    source: str,
    doc: str | None,
    *,
    quick: str | None = None,
    settings: Mapping[str, str] | None = None,
    argv: Sequence[str] | None = None,
) -> argparse.Namespace:
    """The parsed command line of the benchmark whose file is ``source`` (its ``__file__``: under
    ``-m`` its ``__name__`` is ``__main__``): ``--quick`` when the benchmark has a quick
    mode (``quick`` says what it runs), ``settings`` the environment variables it reads (name ->
    what it does, with its default). ``--help`` prints all of it and exits."""
    name = Path(source).stem
    epilog = []
    if settings:
        epilog.append("environment:")
        epilog += [f"  {variable}  {meaning}" for variable, meaning in settings.items()]
        epilog.append("")
    epilog.append(RECORD_NOTE.format(name=name))
    parser = argparse.ArgumentParser(
        prog=f"python -m benchmarks.{name}",
        description=doc,
        epilog="\n".join(epilog),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if quick is not None:
        parser.add_argument("--quick", action="store_true", help=quick)
    return parser.parse_args(argv)
