"""Every `make` command the README shows is a target of the Makefile that make accepts as written
(a dry run: `make -n`), so a renamed target cannot leave the README's first steps broken."""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest

from devtools.template import ROOT


def _make_commands() -> list[list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.splitlines():
            words = shlex.split(line.split("#", 1)[0])
            if "make" in words:
                commands.append(words[words.index("make") :])
    return commands


COMMANDS = _make_commands()


def test_the_readme_shows_the_two_commands_and_the_others() -> None:
    targets = {command[1] for command in COMMANDS}
    assert {"demo", "test", "invoke", "serve", "bench", "test-live", "sam-local-endpoint", "build"} <= targets


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_make_command_of_the_readme_is_accepted_by_the_makefile(command: list[str]) -> None:
    done = subprocess.run(
        ["make", "-n", *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )

    assert done.returncode == 0, done.stderr
