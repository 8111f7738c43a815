"""`python -m benchmarks.<name> --help` says what the benchmark measures and which options and
settings it takes, and runs nothing: a newcomer asking a two-minute benchmark for its usage gets
its usage, and a mistyped option is refused instead of starting the run."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.command_line import benchmark_arguments
from devtools.template import ROOT
from tests.support.commands import run_command

BENCHMARKS = sorted(path.stem for path in (ROOT / "benchmarks").glob("*_bench.py"))


def _run(module: str, *arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environ = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return run_command([sys.executable, "-m", f"benchmarks.{module}", *arguments], cwd=cwd, env=environ)


def _docstring(name: str) -> str:
    tree = ast.parse((ROOT / "benchmarks" / f"{name}.py").read_text(encoding="utf-8"))
    return ast.get_docstring(tree) or ""


def test_every_benchmark_is_found() -> None:
    assert {"cold_start_bench", "peers_bench", "cost_bench", "judge_bench"} <= set(BENCHMARKS)


@pytest.mark.parametrize("name", BENCHMARKS)
def test_help_says_what_the_benchmark_measures_and_runs_nothing(name: str, tmp_path: Path) -> None:
    done = _run(name, "--help", cwd=tmp_path)

    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"usage: python -m benchmarks.{name} "), done.stdout[:300]
    assert _docstring(name).splitlines()[0] in done.stdout, "the help does not say what it measures"
    assert f"python -m benchmarks.run_all {name}" in done.stdout
    assert done.stderr == "", f"something ran: {done.stderr[-2000:]}"


def test_an_option_a_benchmark_does_not_take_is_refused_before_anything_runs(tmp_path: Path) -> None:
    done = _run("judge_bench", "--users", "5", cwd=tmp_path)

    assert done.returncode == 2
    assert "unrecognized arguments: --users 5" in done.stderr
    assert done.stdout == ""


def test_the_help_lists_a_quick_mode_and_the_environment_a_benchmark_reads(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        benchmark_arguments(
            "/x/benchmarks/some_bench.py",
            "Measures X.",
            quick="fewer users",
            settings={"SOME_SCALE": "(1.0)"},
            argv=["-h"],
        )
    printed = capsys.readouterr().out

    assert exited.value.code == 0
    assert "usage: python -m benchmarks.some_bench [-h] [--quick]" in printed
    assert "fewer users" in printed and "SOME_SCALE  (1.0)" in printed
    assert benchmark_arguments("/x/some_bench.py", None, quick="q", argv=["--quick"]).quick is True


@pytest.mark.parametrize("name", BENCHMARKS)
def test_every_benchmark_reads_its_command_line_before_it_runs(name: str) -> None:
    tree = ast.parse((ROOT / "benchmarks" / f"{name}.py").read_text(encoding="utf-8"))
    guards = [node for node in tree.body if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)]

    assert len(guards) == 1
    calls = [ast.unparse(node.func) for node in ast.walk(guards[0]) if isinstance(node, ast.Call)]
    assert "benchmark_arguments" in calls, f"{name} runs without reading its command line"
    the_run = "main" if "main" in calls else None
    assert the_run is not None and calls.index("benchmark_arguments") < calls.index("main")
