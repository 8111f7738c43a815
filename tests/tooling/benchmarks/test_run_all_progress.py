"""`make bench` is never silent: each benchmark's start and end with counts and elapsed time,
and a heartbeat while a long one runs."""

from __future__ import annotations

import threading
import types
from pathlib import Path

import pytest

from benchmarks import run_all


def test_given_two_benchmarks_when_the_run_goes_then_it_prints_counts_elapsed_time_and_a_heartbeat(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    lines: list[str] = []
    heard = threading.Event()

    def record(line: str) -> None:
        lines.append(line)
        if "still running" in line:
            heard.set()

    def slow_main() -> None:  # runs until the heartbeat has spoken
        assert heard.wait(timeout=30)

    modules = {"benchmarks.slow_bench": types.SimpleNamespace(main=slow_main)}
    modules["benchmarks.quick_bench"] = types.SimpleNamespace(main=lambda: print("| a | b |"))
    monkeypatch.setattr(run_all, "discover", lambda: ["slow_bench", "quick_bench"])
    monkeypatch.setattr(run_all.importlib, "import_module", modules.__getitem__)
    monkeypatch.setattr(run_all, "progress", record)
    monkeypatch.setattr(run_all, "HEARTBEAT_S", 0.01)
    monkeypatch.setattr(run_all, "HERE", tmp_path / "benchmarks")
    monkeypatch.setattr(run_all, "RESULTS", tmp_path / "benchmarks" / "results" / "latest.md")
    monkeypatch.setattr(run_all.sys, "argv", ["run_all"])

    assert run_all.main() == 0

    assert lines[0].startswith("[bench 1/2] slow_bench starting")
    assert any(line.startswith("[bench 1/2] slow_bench still running, ") for line in lines)
    assert any(line.startswith("[bench 1/2] slow_bench done in ") and "(run: " in line for line in lines)
    assert any(line.startswith("[bench 2/2] quick_bench done in ") for line in lines)
    assert "| a | b |" in (tmp_path / "benchmarks" / "results" / "latest.md").read_text(encoding="utf-8")
