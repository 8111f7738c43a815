"""`make bench` never replaces recorded figures with a failure (a rerun that could not
import the product overwrote the committed ``latest.md``): a benchmark that fails keeps the
section of its earlier run, byte for byte, the failure goes to the console and the exit code, and
the header says which sections were rerun when. The benchmarks here are fake modules handed to
the runner in place of ``benchmarks.<name>``."""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from benchmarks import run_all

EARLIER = """# Benchmark results

Run at 2026-01-01 10:00:00 UTC on linux, Python 3.13.0; beta_bench rerun at 2026-01-02 09:00:00 UTC on linux, \
Python 3.13.0.

## alpha_bench (12.0 s)

```
alpha figures from the first run
## a heading inside the output
```

## beta_bench (3.0 s, rerun at 2026-01-02 09:00:00 UTC on linux, Python 3.13.0)

```
beta figures from the day after
```
"""


def failing_main() -> None:
    print("half a table before it broke")
    raise RuntimeError("benchmark broke")


class Bench:
    """The runner pointed at a temporary results folder and at fake benchmark modules."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        self.root = tmp_path / "benchmarks"
        self.latest = self.root / "results" / "latest.md"
        self.quick = self.root / "results" / "quick.md"
        self.modules: dict[str, object] = {}
        days = range(1, 10)
        self.stamps: Iterator[str] = iter(f"2026-02-0{day} 12:00:00 UTC on linux, Python 3.13.0" for day in days)
        self.ran: list[str] = []
        monkeypatch.setattr(run_all, "HERE", self.root)
        monkeypatch.setattr(run_all, "RESULTS", self.latest)
        monkeypatch.setattr(run_all, "QUICK_RESULTS", self.quick, raising=False)
        monkeypatch.setattr(run_all, "discover", lambda: ["alpha_bench", "beta_bench", "gamma_bench"])
        monkeypatch.setattr(run_all.importlib, "import_module", self._import)
        monkeypatch.setattr(run_all, "progress", lambda line: None)
        monkeypatch.setattr(run_all, "run_stamp", lambda: next(self.stamps), raising=False)

    def _import(self, dotted: str) -> object:
        name = dotted.removeprefix("benchmarks.")
        module = self.modules[name]
        if isinstance(module, BaseException):
            raise module
        return module

    def module(
        self, name: str, main: Callable[[], None] | BaseException, quick: Callable[[], None] | None = None
    ) -> None:
        if isinstance(main, BaseException):
            self.modules[name] = main
            return
        namespace = types.SimpleNamespace(main=self._logged(name, main))
        if quick is not None:
            namespace.main_quick = self._logged(f"{name} quick", quick)
        self.modules[name] = namespace

    def _logged(self, label: str, body: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            self.ran.append(label)
            body()

        return run

    def table(self, name: str, text: str) -> None:
        self.module(name, lambda: print(text))

    def run(self, monkeypatch: pytest.MonkeyPatch, *argv: str) -> int:
        monkeypatch.setattr(run_all.sys, "argv", ["run_all", *argv])
        return run_all.main()

    def record(self, figures: str) -> None:
        """``latest.md`` as an earlier run left it."""
        self.latest.parent.mkdir(parents=True)
        self.latest.write_text(figures, encoding="utf-8")


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Bench:
    return Bench(monkeypatch, tmp_path)


def recorded(bench: Bench) -> str:
    return bench.latest.read_text(encoding="utf-8")


def section(text: str, name: str) -> str:
    return run_all._sections(text)[name]


def test_given_recorded_figures_when_a_rerun_of_one_benchmark_fails_then_the_file_is_left_as_it_was(
    bench: Bench, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bench.record(EARLIER)
    bench.module("alpha_bench", failing_main)

    assert bench.run(monkeypatch, "alpha_bench") == 1

    assert recorded(bench) == EARLIER
    err = capsys.readouterr().err
    assert "RuntimeError: benchmark broke" in err
    assert "alpha_bench" in err.splitlines()[-1]


def test_given_recorded_figures_when_the_benchmark_cannot_even_be_imported_then_its_section_is_kept(
    bench: Bench, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bench.record(EARLIER)
    bench.module("alpha_bench", ModuleNotFoundError("No module named 'lambda_agents'"))

    assert bench.run(monkeypatch, "alpha_bench") == 1

    assert recorded(bench) == EARLIER
    assert "No module named 'lambda_agents'" in capsys.readouterr().err


def test_given_recorded_figures_when_a_benchmark_exits_then_that_counts_as_a_failure_and_the_others_still_run(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench.record(EARLIER)

    def exits() -> None:
        raise SystemExit(3)

    bench.module("alpha_bench", exits)
    bench.table("beta_bench", "beta rerun")

    assert bench.run(monkeypatch, "alpha_bench", "beta_bench") == 1

    assert section(recorded(bench), "alpha_bench") == section(EARLIER, "alpha_bench")
    assert "beta rerun" in section(recorded(bench), "beta_bench")


def test_given_recorded_figures_when_a_whole_run_has_one_failure_then_that_section_is_kept_and_the_header_dates_each(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench.record(EARLIER)
    bench.table("alpha_bench", "alpha new")
    bench.module("beta_bench", failing_main)
    bench.table("gamma_bench", "gamma new")

    assert bench.run(monkeypatch) == 1

    text = recorded(bench)
    assert section(text, "beta_bench") == section(EARLIER, "beta_bench")
    assert "half a table" not in text
    assert "alpha new" in section(text, "alpha_bench")
    assert "gamma new" in section(text, "gamma_bench")
    # alpha and gamma are from this run, beta from the day after the first run: the header says so.
    header = text.split("\n## ", 1)[0]
    assert "Run at 2026-01-01 10:00:00 UTC" in header
    assert "alpha_bench, gamma_bench rerun at 2026-02-01 12:00:00 UTC" in header
    assert "beta_bench rerun at 2026-01-02 09:00:00 UTC" in header
    assert section(text, "alpha_bench").startswith("## alpha_bench (")
    assert "rerun at 2026-02-01 12:00:00 UTC" in section(text, "alpha_bench").splitlines()[0]


def test_given_no_earlier_results_when_the_first_run_has_a_failure_then_the_others_are_written_and_it_has_no_section(
    bench: Bench, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bench.table("alpha_bench", "alpha first")
    bench.module("beta_bench", failing_main)
    bench.table("gamma_bench", "gamma first")

    assert bench.run(monkeypatch) == 1

    text = recorded(bench)
    assert set(run_all._sections(text)) == {"alpha_bench", "gamma_bench"}
    assert "benchmark broke" not in text
    assert "half a table" not in text
    header = text.split("\n## ", 1)[0]
    assert "Run at 2026-02-01 12:00:00 UTC" in header
    assert "rerun" not in header
    assert "No figures yet: beta_bench." in header
    assert "RuntimeError: benchmark broke" in capsys.readouterr().err


def test_given_no_earlier_results_when_the_only_benchmark_run_fails_then_nothing_claims_figures(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench.module("beta_bench", failing_main)

    assert bench.run(monkeypatch, "beta_bench") == 1

    text = recorded(bench) if bench.latest.exists() else ""
    assert run_all._sections(text) == {}
    assert "half a table" not in text


def test_given_a_clean_whole_run_then_every_section_is_from_it_and_the_header_lists_no_rerun(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench.record(EARLIER)
    for name in ("alpha_bench", "beta_bench", "gamma_bench"):
        bench.table(name, f"{name} fresh")

    assert bench.run(monkeypatch) == 0

    text = recorded(bench)
    header = text.split("\n## ", 1)[0]
    assert header == "# Benchmark results\n\nRun at 2026-02-01 12:00:00 UTC on linux, Python 3.13.0.\n"
    assert list(run_all._sections(text)) == ["alpha_bench", "beta_bench", "gamma_bench"]
    assert all("rerun" not in part.splitlines()[0] for part in run_all._sections(text).values())


def test_given_two_partial_reruns_then_the_header_keeps_both_dates(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench.record(EARLIER)
    bench.table("alpha_bench", "alpha second")
    bench.table("gamma_bench", "gamma second")

    assert bench.run(monkeypatch, "alpha_bench") == 0
    assert bench.run(monkeypatch, "gamma_bench") == 0

    header = recorded(bench).split("\n## ", 1)[0]
    assert "Run at 2026-01-01 10:00:00 UTC on linux, Python 3.13.0;" in header
    assert "beta_bench rerun at 2026-01-02 09:00:00 UTC" in header
    assert "alpha_bench rerun at 2026-02-01 12:00:00 UTC" in header
    assert "gamma_bench rerun at 2026-02-02 12:00:00 UTC" in header
    assert section(recorded(bench), "beta_bench") == section(EARLIER, "beta_bench")


def test_given_a_name_that_is_no_benchmark_then_nothing_runs_and_nothing_is_written(
    bench: Bench, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bench.record(EARLIER)
    bench.table("alpha_bench", "alpha")

    with pytest.raises(SystemExit) as exited:
        bench.run(monkeypatch, "alpha_bench", "peer_bench")

    assert exited.value.code == 2
    assert bench.ran == []
    assert recorded(bench) == EARLIER
    assert "peer_bench" in capsys.readouterr().err


def test_given_the_quick_mode_then_it_runs_the_quick_entries_into_quick_md_and_leaves_latest_md_alone(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench.record(EARLIER)
    bench.module("alpha_bench", lambda: print("alpha full"), quick=lambda: print("alpha quick"))
    bench.module("gamma_bench", lambda: print("gamma full"), quick=lambda: print("gamma quick"))
    monkeypatch.setattr(run_all, "QUICK", ["alpha_bench", "gamma_bench"])

    assert bench.run(monkeypatch, "--quick") == 0

    assert recorded(bench) == EARLIER
    assert bench.ran == ["alpha_bench quick", "gamma_bench quick"]
    quick = bench.quick.read_text(encoding="utf-8")
    assert quick.startswith("# Quick benchmark results")
    assert "alpha quick" in section(quick, "alpha_bench")
    assert "gamma quick" in section(quick, "gamma_bench")
    assert "alpha full" not in quick
    assert "gamma full" not in quick


def test_given_the_quick_mode_when_a_quick_benchmark_fails_then_its_earlier_quick_section_is_kept(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench.module("alpha_bench", lambda: None, quick=lambda: print("alpha quick, first"))
    monkeypatch.setattr(run_all, "QUICK", ["alpha_bench"])
    assert bench.run(monkeypatch, "--quick") == 0
    first = bench.quick.read_text(encoding="utf-8")

    bench.module("alpha_bench", lambda: None, quick=failing_main)
    assert bench.run(monkeypatch, "--quick") == 1

    assert bench.quick.read_text(encoding="utf-8") == first
    assert not bench.latest.exists()
