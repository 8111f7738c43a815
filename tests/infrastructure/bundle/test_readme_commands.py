"""Every `make` and `python -m` command that README.md, docs/*.md and benchmarks/README.md show works
as written from the venv, with no PYTHONPATH, so a newcomer's first commands cannot be broken by a
renamed target or a module only the Makefile's environment could find.

- `make ...`: make accepts it as written (a dry run, `make -n`): the target exists and its recipe
  expands. Running them is what CI's `make test` and the suites do.
- `python -m <module>`: the module resolves in the venv's interpreter started outside the
  repository with PYTHONPATH unset (the project is installed editable into the venv, so nothing
  depends on the working directory), and runs under `-m`. Every one with a command line (argparse,
  or the benchmarks' ``benchmark_arguments``: the devtools, every benchmark, `benchmarks.run_all`,
  `benchmarks.real_speed.user`) is run as written with `--help` added, so its subcommands and
  arguments are parsed and nothing runs; `devtools.openapi` and `devtools.runner --help` are run
  exactly as written. Running the benchmarks themselves takes seconds to minutes each
  (benchmarks/README.md, "How long each takes"), and `make bench-quick` runs the quick ones.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from devtools.template import ROOT

DOCUMENTS = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=\S*$")
MODULE = re.compile(r"\bpython3? -m ([\w.]+)((?: [^\s|>;&#`]+)*)")
RUN_AS_WRITTEN = {("devtools.openapi", ()), ("devtools.runner", ("--help",))}


def code_spans(text: str) -> list[str]:
    """The document's fenced blocks, one logical line each (continuations joined), and inline code."""
    fenced = re.findall(r"(?ms)^```[^\n]*\n(.*?)^```", text)
    lines = [line for block in fenced for line in block.replace("\\\n", " ").splitlines()]
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"(?ms)^```[^\n]*\n.*?^```", "", text))
    return lines + inline


def _words(span: str) -> list[str]:
    try:
        return shlex.split(span.split(" #", 1)[0].strip())
    except ValueError:  # a span that is not a shell command (unbalanced quotes in prose code)
        return []


def make_commands() -> dict[tuple[str, ...], str]:
    """`make <target> [VAR=value]` as written, with where it is shown; placeholders (`<file>`) left out."""
    found: dict[tuple[str, ...], str] = {}
    for document in DOCUMENTS:
        for span in code_spans(document.read_text(encoding="utf-8")):
            words = _words(span)
            while words and ASSIGNMENT.match(words[0]):
                words = words[1:]
            if len(words) >= 2 and words[0] == "make" and re.fullmatch(r"[a-z][\w-]*", words[1]):
                arguments = tuple(word for word in words[1:] if "<" not in word and not word.startswith("#"))
                found.setdefault(arguments, str(document.relative_to(ROOT)))
    return found


def module_commands() -> dict[tuple[str, tuple[str, ...]], str]:
    """`python -m <module> [arguments]` as written (placeholders and `...` left out), with where."""
    found: dict[tuple[str, tuple[str, ...]], str] = {}
    for document in DOCUMENTS:
        for span in code_spans(document.read_text(encoding="utf-8")):
            for module, arguments in MODULE.findall(span):
                if module.endswith("."):  # `benchmarks.<name>`: a placeholder, not a module
                    continue
                kept = tuple(word for word in arguments.split() if "<" not in word and word != "...")
                found.setdefault((module, kept), str(document.relative_to(ROOT)))
    return found


MAKE = make_commands()
MODULES = module_commands()


def _venv_python(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environ = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, *arguments], cwd=cwd, env=environ, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_documents_show_the_two_commands_and_the_others() -> None:
    targets = {command[0] for command in MAKE}
    assert {"demo", "test", "test-sam-local", "invoke", "serve", "bench", "bench-quick", "build"} <= targets
    modules = {module for module, _ in MODULES}
    assert {"devtools.runner", "devtools.openapi", "devtools.fanout_plan", "benchmarks.run_all"} <= modules


def test_the_extraction_reads_commands_as_a_shell_would() -> None:
    spans = code_spans("x `make serve PORT=3000` y\n```sh\nOPENAI_API_KEY=sk-1 make test-live  # note\n```\n")

    assert [_words(span) for span in spans] == [
        ["OPENAI_API_KEY=sk-1", "make", "test-live"],
        ["make", "serve", "PORT=3000"],
    ]
    assert MODULE.findall("`.venv/bin/python -m devtools.sam_local env-file --stack s > dev.env.json`") == [
        ("devtools.sam_local", " env-file --stack s")
    ]


@pytest.mark.parametrize("command", sorted(MAKE), ids=" ".join)
def test_every_make_command_shown_is_accepted_by_the_makefile(command: tuple[str, ...]) -> None:
    done = subprocess.run(["make", "-n", *command], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)

    assert done.returncode == 0, f"`make {' '.join(command)}` ({MAKE[command]}): {done.stderr}"


@pytest.mark.parametrize("module", sorted({module for module, _ in MODULES}))
def test_every_python_module_shown_resolves_from_the_venv_without_pythonpath(module: str, tmp_path: Path) -> None:
    probe = (
        "import importlib.util, sys; spec = importlib.util.find_spec(sys.argv[1]); "
        "print(spec.origin if spec and spec.origin else '')"
    )
    done = _venv_python("-c", probe, module, cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    origin = Path(done.stdout.strip()) if done.stdout.strip() else None
    assert origin is not None and origin.is_file(), f"`python -m {module}` does not resolve outside the repository"
    assert ROOT in origin.parents, f"{module} resolves to {origin}, not this checkout"
    if origin.name == "__init__.py":  # a package (the websockets client): -m runs its __main__
        origin = origin.with_name("__main__.py")
        assert origin.is_file(), f"{module} has no __main__ to run under -m"
    source = origin.read_text(encoding="utf-8")
    assert '__name__ == "__main__"' in source or origin.name == "__main__.py", f"{module} does nothing under -m"


def _has_a_command_line(module: str) -> bool:
    """Whether the module parses options (argparse, or the benchmarks' ``benchmark_arguments``), so
    that `--help` only prints its usage."""
    source = (ROOT / Path(*module.split("."))).with_suffix(".py").read_text(encoding="utf-8")
    return "argparse" in source or "benchmark_arguments(" in source


# The commands with a command line (argparse), each as written with `--help` added: argparse reads the
# words as written (a subcommand, a benchmark name) and prints that level's usage instead of running.
COMMAND_LINES = sorted(
    (module, arguments)
    for module, arguments in MODULES
    if (module.startswith("devtools.") or module.startswith("benchmarks.")) and _has_a_command_line(module)
)


@pytest.mark.parametrize("command", COMMAND_LINES, ids=lambda command: " ".join((command[0], *command[1])))
def test_every_python_command_line_shown_parses_as_written_from_the_venv(
    command: tuple[str, tuple[str, ...]], tmp_path: Path
) -> None:
    module, arguments = command
    done = _venv_python("-m", module, *arguments, "--help", cwd=tmp_path)

    assert done.returncode == 0, f"`python -m {module} {' '.join(arguments)} --help`: {done.stderr[-2000:]}"
    assert "usage:" in done.stdout


BARE_MODULE = re.compile(r"(?<![\w/.])python3? -m [\w.]")


def _shown() -> list[tuple[str, str, bool]]:
    """(document, code, whether it is a line of a fenced block) for every code span of the documents."""
    shown = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        fenced = {
            line
            for block in re.findall(r"(?ms)^```[^\n]*\n(.*?)^```", text)
            for line in block.replace("\\\n", " ").splitlines()
        }
        shown += [(str(document.relative_to(ROOT)), span, span in fenced) for span in code_spans(text)]
    return shown


def test_every_python_module_shown_is_run_by_the_venvs_interpreter() -> None:
    """`python -m x` fails in a shell whose venv is not active; `.venv/bin/python -m x` works as written."""
    bare = [(where, span) for where, span, _ in _shown() if BARE_MODULE.search(span)]

    assert bare == [], "write these as `.venv/bin/python -m ...`"


def test_every_sam_command_shown_calls_the_sam_cli_that_make_setup_installs() -> None:
    """No shell of a newcomer has `sam` on PATH: a command calls `.tools/bin/sam`, which `make setup`
    installs. A line of a code block is a command; inline, one with options is (`sam local invoke
    --env-vars x.json`), one that names a command in prose is not (`sam deploy`, `sam validate --lint`)."""
    bare = []
    for where, span, in_a_block in _shown():
        words = _words(span)
        while words and ASSIGNMENT.match(words[0]):
            words = words[1:]
        options = len(words) >= 4 and any(word.startswith("-") for word in words)
        if words[:1] == ["sam"] and (in_a_block or options):
            bare.append((where, span))
    plan = subprocess.run(
        ["make", "-n", "-B", "setup"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )

    assert bare == [], "write these as `.tools/bin/sam ...`"
    assert plan.returncode == 0 and "scripts/setup.sh sam" in plan.stdout, "make setup no longer installs the SAM CLI"
    assert any(".tools/bin/sam" in span for _, span, _ in _shown())


def test_the_commands_run_as_written_answer(tmp_path: Path) -> None:
    assert set(MODULES) >= RUN_AS_WRITTEN, "the commands run as written are no longer shown"
    document = _venv_python("-m", "devtools.openapi", cwd=tmp_path)
    runner_help = _venv_python("-m", "devtools.runner", "--help", cwd=tmp_path)

    assert document.returncode == 0, document.stderr[-2000:]
    assert "/nudges/profile" in json.loads(document.stdout)["paths"]
    assert runner_help.returncode == 0 and "serve" in runner_help.stdout
