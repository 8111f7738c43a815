"""benchmarks/README.md cannot drift: every `make` target and `python -m` module it names exists,
every benchmark it names to ``run_all`` is one, and every ``benchmarks/*_bench.py`` has its section
(the README promised a command and a time that were no longer true)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from benchmarks import run_all

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "benchmarks" / "README.md"


def code_spans() -> list[str]:
    """The README's fenced blocks and inline code: where its commands are."""
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"(?ms)^```[^\n]*\n(.*?)^```", text)
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"(?ms)^```[^\n]*\n.*?^```", "", text))
    return blocks + inline


def named(pattern: str) -> set[str]:
    return {match for span in code_spans() for match in re.findall(pattern, span)}


def make_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"(?m)^([A-Za-z][\w-]*)\s*:(?!=)", makefile))


def test_given_the_readme_then_it_names_commands_at_all() -> None:
    assert {"bench", "bench-quick", "demo"} <= named(r"\bmake ([\w-]+)")
    assert "benchmarks.run_all" in named(r"python -m ([\w.]+)")


@pytest.mark.parametrize("target", sorted(named(r"\bmake ([\w-]+)")))
def test_given_a_make_target_in_the_readme_then_the_makefile_has_it(target: str) -> None:
    assert target in make_targets(), f"benchmarks/README.md names `make {target}`, the Makefile has no such target"


@pytest.mark.parametrize("module", sorted(named(r"python -m ([\w.]*\w)(?![\w.<])")))
def test_given_a_python_module_in_the_readme_then_it_can_be_run(module: str) -> None:
    spec = importlib.util.find_spec(module)
    assert spec is not None, f"benchmarks/README.md names `python -m {module}`, which does not exist"
    path = Path(str(spec.origin))
    assert path.is_file()
    assert '__name__ == "__main__"' in path.read_text(encoding="utf-8"), f"{module} does nothing under python -m"


def test_given_run_all_commands_in_the_readme_then_each_names_a_benchmark_it_accepts() -> None:
    for span in code_spans():
        for arguments in re.findall(r"python -m benchmarks\.run_all((?: [\w-]+)*)", span):
            words = arguments.split()
            quick = "--quick" in words
            allowed = run_all.QUICK if quick else run_all.discover()
            for word in words:
                if word.startswith("--"):
                    assert word == "--quick", span
                else:
                    assert word in allowed, f"`{span}`: {word} is not a benchmark run_all accepts here"


def test_given_every_benchmark_then_the_readme_has_its_section_and_its_time() -> None:
    text = README.read_text(encoding="utf-8")
    for name in run_all.discover():
        assert f"\n### `{name}`\n" in text, f"benchmarks/README.md has no section for {name}"
        assert re.search(rf"(?m)^\| `{name}` \| [^|]+ \|", text), f"benchmarks/README.md gives no time for {name}"
        assert f"python -m benchmarks.{name}`" in text, f"benchmarks/README.md does not say how to run {name} alone"


def test_given_the_quick_benchmarks_then_the_readme_says_what_each_runs() -> None:
    quick_section = README.read_text(encoding="utf-8").split("## The quick run", 1)[1].split("\n## ", 1)[0]
    for name in run_all.QUICK:
        assert f"- `{name}`:" in quick_section
