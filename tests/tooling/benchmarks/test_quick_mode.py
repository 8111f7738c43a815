"""`make bench-quick` is the full benchmarks with fewer samples, not other benchmarks: the quick
peer runs are the first users of the full runs (the same seeds, so the same fault plans) with
every fault class still present, the real-speed row is one the full run has, and a quick run never
writes the full run's files."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from benchmarks import peers_bench, real_speed_bench, run_all


def fault_classes(run: peers_bench.Run) -> set[str]:
    return {label for plan in run.plans().values() for label in plan.labels or ["clean"]}


@pytest.mark.parametrize(
    ("full", "quick"),
    list(zip((peers_bench.SAME_START, peers_bench.RAMP_START), peers_bench.quick_runs(), strict=True)),
)
def test_given_the_quick_peer_runs_then_they_are_the_first_users_of_the_full_runs_with_every_fault_class(
    full: peers_bench.Run, quick: peers_bench.Run
) -> None:
    assert quick.key == full.key
    assert quick.seed == full.seed
    assert quick.start == full.start
    assert quick.rates == full.rates
    assert quick.sizes == full.sizes
    assert quick.users < full.users
    full_plans = full.plans()
    assert all(plan == full_plans[number] for number, plan in quick.plans().items())
    assert fault_classes(quick) == fault_classes(full)


def test_given_the_quick_peer_runs_then_they_have_the_same_sides_as_the_full_runs() -> None:
    for full, quick in zip((peers_bench.SAME_START, peers_bench.RAMP_START), peers_bench.quick_runs(), strict=True):
        assert [label for label, _ in peers_bench.sides_for(quick)] == [
            label for label, _ in peers_bench.sides_for(full)
        ]


def test_given_the_quick_real_speed_row_then_the_full_run_measures_it_too() -> None:
    profile, workloads = real_speed_bench.QUICK
    assert profile in real_speed_bench.PROFILES
    assert profile in real_speed_bench.BASELINE_PROFILES  # the quick row keeps its baseline
    for route, users in workloads.items():
        assert 0 < users <= real_speed_bench.USERS[route]


def test_given_the_quick_list_then_every_benchmark_on_it_exists_and_has_a_quick_mode() -> None:
    assert run_all.QUICK
    for name in run_all.QUICK:
        assert name in run_all.discover()
        assert callable(importlib.import_module(f"benchmarks.{name}").main_quick)


def test_given_a_quick_peer_run_then_it_says_so_and_leaves_peers_md_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[tuple[str, int]] = []

    def section(run: peers_bench.Run) -> list[str]:
        ran.append((run.key, run.users))
        return [f"table of {run.key}"]

    monkeypatch.setattr(peers_bench, "run_section", section)
    monkeypatch.setattr(peers_bench, "extraction_rows", lambda: [])
    monkeypatch.setattr(peers_bench, "RESULTS", tmp_path / "peers.md")

    peers_bench.main_quick()

    assert ran == [(run.key, run.users) for run in peers_bench.quick_runs()]
    assert not (tmp_path / "peers.md").exists()
    out = capsys.readouterr().out
    assert out.startswith("Quick mode: same start 40 of 200 users (seed 11), ramp start 30 of 40 users (seed 7);")

    peers_bench.main()

    assert (tmp_path / "peers.md").read_text(encoding="utf-8").startswith("# Peer benchmark")
    assert "Quick mode" not in (tmp_path / "peers.md").read_text(encoding="utf-8")
