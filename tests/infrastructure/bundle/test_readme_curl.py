"""The README's quick start runs as written: every ```sh block that calls `curl` is run, in order, by
bash with the real curl against the local runner as `make serve` starts it, and each request must
answer the status the README says next to it (`# -> 201`; 2xx where it names none).

A newcomer copies these blocks first; a body field renamed, a route moved, a header forgotten or an
answer that no longer carries the id the next block reads would leave them at their first step, so
any of those fails here. The runner is started as a process on an ephemeral port (``--port 0``), the
README's ``127.0.0.1:3000`` replaced by it; curl runs through a wrapper on ``PATH`` that records each
answer's status and passes the body through, so the blocks themselves run unchanged.
Where no curl is installed, a stand-in reads the options the README uses exactly as curl does (its
form Content-Type for `-d` included) and fails on any other, so the check never turns into a skip.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from devtools.template import ROOT
from tests.support.commands import CURL_WRAPPER, run_command

README = ROOT / "README.md"
README_ORIGIN = "127.0.0.1:3000"
SERVING = re.compile(r"serving \d+ routes on http://127\.0\.0\.1:(\d+)/v1")
EXPECTED = re.compile(r"#\s*->\s*(\d{3})\b")
ASSIGNED = re.compile(r"^([A-Z_][A-Z0-9_]*)=", re.M)
STARTUP_SECONDS = 120
BLOCK_SECONDS = 120

# Where no curl is installed: the options the README's blocks use, read as curl reads them (`-d` makes a
# POST with curl's form Content-Type unless a header sets one, so a forgotten JSON header still gets its
# 415), the status recorded like the wrapper's; any other option fails the block instead of being ignored.
CURL_STANDIN = """
import os, sys, urllib.error, urllib.request
method, headers, data, url, args = None, {}, None, None, sys.argv[1:]
while args:
    word = args.pop(0)
    if word in ("-s", "--silent"):
        continue
    if word in ("-X", "--request"):
        method = args.pop(0)
    elif word in ("-H", "--header"):
        name, _, value = args.pop(0).partition(":")
        headers[name.strip()] = value.strip()
    elif word in ("-d", "--data"):
        data = args.pop(0).encode()
    elif word.startswith("-") or url:
        sys.exit(f"curl stand-in: {word!r} is not an option it reads as curl does")
    else:
        url = word
if data is not None and not any(name.lower() == "content-type" for name in headers):
    headers["Content-Type"] = "application/x-www-form-urlencoded"
request = urllib.request.Request(url, data=data, headers=headers, method=method or ("POST" if data else "GET"))
try:
    with urllib.request.urlopen(request, timeout=60) as answer:
        status, body = answer.status, answer.read()
except urllib.error.HTTPError as error:
    status, body = error.code, error.read()
with open(os.environ["CURL_STATUSES"], "a") as statuses:
    statuses.write(f"{status}\\n")
sys.stdout.buffer.write(body)
"""


def curl_blocks(text: str) -> list[str]:
    """The ```sh / ```bash blocks that call curl, in the README's order."""
    return [block for block in re.findall(r"```(?:sh|bash)\n(.*?)```", text, re.S) if re.search(r"\bcurl\b", block)]


def logical_lines(block: str) -> list[str]:
    """The block's lines with backslash continuations joined, as the shell reads them."""
    return block.replace("\\\n", " ").splitlines()


def expected_statuses(block: str) -> list[str]:
    """Per curl call, the status the README names after it (`# -> 201`), or "2xx"."""
    expected: list[str] = []
    for line in logical_lines(block):
        stripped = line.strip()
        if stripped.startswith("#"):
            named = EXPECTED.search(stripped)
            if named and expected and expected[-1] == "2xx":
                expected[-1] = named.group(1)
        else:
            expected.extend("2xx" for _ in re.findall(r"\bcurl\b", stripped))
    return expected


def matches(status: str, expected: str) -> bool:
    return status.startswith("2") and len(status) == 3 if expected == "2xx" else status == expected


def test_the_extraction_reads_the_expected_statuses_and_continuations() -> None:
    block = (
        "curl -s -X PUT http://x/a \\\n  -d '{}'\n# -> 201 created\n"
        "A=$(curl -s http://x/b | python3 -c 'pass')\n"
        'curl -s http://x/c\n# -> 404 {"error": ...}\n'
    )

    assert logical_lines(block)[0] == "curl -s -X PUT http://x/a    -d '{}'"
    assert expected_statuses(block) == ["201", "2xx", "404"]
    assert matches("204", "2xx") and not matches("404", "2xx") and not matches("200", "201")


def test_the_readme_is_a_front_door_of_at_most_300_lines_with_contents() -> None:
    text = README.read_text(encoding="utf-8")
    first_three = " ".join(text.splitlines()[:3]).lower()

    assert len(text.splitlines()) <= 300, "the long material belongs in docs/, linked from a short section"
    assert "\n## Contents\n" in text
    for product in ("habit nudges", "chat", "status judge", "interview"):
        assert product in first_three, f"the first three lines do not say the bundle holds the {product}"
    # What a person gets, in two plain sentences before any term of the stack.
    first, second = text.splitlines()[1:3]
    for sentence in (first, second):
        assert sentence.endswith(".") and sentence.count(". ") == 0, f"not one sentence: {sentence}"
    assert not any(term in f"{first} {second}" for term in ("SAM", "DynamoDB", "SQS", "Lambda", "layer"))
    assert "make demo" in text and "make test" in text


def test_the_readme_has_a_curl_example_per_system() -> None:
    text = "\n".join(curl_blocks(README.read_text(encoding="utf-8")))
    for route in (
        "/v1/nudges/profile",
        "/_local/nudges/day",
        "/v1/nudges/schedule",
        "/v1/api/admin/tiktok/pending",
        "/v1/ai-agent/sessions",
        "/process-template",
        "/v1/judge",
        "/v1/api/admin/jobs",
        "/v1/interviews",
    ):
        assert route in text, f"the quick start has no curl example of {route}"
    assert sum(len(expected_statuses(block)) for block in curl_blocks(README.read_text(encoding="utf-8"))) >= 5


@pytest.fixture(scope="module")
def served_root() -> Iterator[str]:
    """`make serve`'s runner (``python -m devtools.runner serve``) on an ephemeral port, offline model."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AWS_ENDPOINT_URL"))}
    environ.update({"AWS_DEFAULT_REGION": "us-east-1", "PYTHONUNBUFFERED": "1"})
    process = subprocess.Popen(
        [sys.executable, "-m", "devtools.runner", "serve", "--port", "0"],
        cwd=ROOT,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    port: list[str] = []
    seen: list[str] = []
    ready = threading.Event()

    def read_output() -> None:  # keeps the pipe drained for the whole run
        assert process.stdout is not None
        for line in process.stdout:
            seen.append(line)
            found = SERVING.search(line)
            if found and not port:
                port.append(found.group(1))
                ready.set()
        ready.set()

    reader = threading.Thread(target=read_output, daemon=True)
    reader.start()
    try:
        ready.wait(STARTUP_SECONDS)
        assert port, "the runner did not start serving:\n" + "".join(seen[-40:])
        yield f"127.0.0.1:{port[0]}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def curl_on_path(folder: Path) -> str:
    """A `curl` for the blocks in ``folder``: the wrapper of the real one, or where none is installed,
    ``CURL_STANDIN`` (the options the README uses, read as curl reads them); the real curl's path or ""."""
    folder.mkdir()
    real_curl = shutil.which("curl") or ""
    script = CURL_WRAPPER if real_curl else f"#!{sys.executable}\n{CURL_STANDIN}"
    (folder / "curl").write_text(script, encoding="utf-8")
    (folder / "curl").chmod(0o755)
    return real_curl


def test_the_curl_stand_in_sends_what_curl_sends(tmp_path: Path) -> None:
    seen: list[tuple[str, str, dict[str, str], bytes]] = []

    class Recorder(BaseHTTPRequestHandler):
        def _record(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            seen.append((self.command, self.path, dict(self.headers), body))
            self.send_response(201)
            self.end_headers()
            self.wfile.write(b'{"ok": true}')

        def do_PUT(self) -> None:
            self._record()

        def do_POST(self) -> None:
            self._record()

        def do_GET(self) -> None:
            self._record()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    statuses = tmp_path / "statuses"
    environ = dict(os.environ, CURL_STATUSES=str(statuses))

    def standin(*arguments: str) -> subprocess.CompletedProcess[str]:
        return run_command([sys.executable, "-c", CURL_STANDIN, *arguments], env=environ, timeout=30)

    try:
        put = standin(
            "-s", "-X", "PUT", f"{url}/a?b=1", "-H", "Content-Type: application/json", "-H", "X-Local-User: al", "-d",
            '{"x": 1}',
        )  # fmt: skip
        form = standin("-s", f"{url}/f", "-d", "a=1")
        unknown = standin("-s", "--retry", "3", f"{url}/u")
    finally:
        server.shutdown()
        server.server_close()

    assert put.returncode == 0 and put.stdout == '{"ok": true}'
    assert seen[0][:2] == ("PUT", "/a?b=1") and seen[0][3] == b'{"x": 1}'
    assert seen[0][2]["Content-Type"] == "application/json" and seen[0][2]["X-Local-User"] == "al"
    assert seen[1][0] == "POST" and seen[1][2]["Content-Type"] == "application/x-www-form-urlencoded"
    assert unknown.returncode != 0, "an option the stand-in does not know must fail, not be ignored"
    assert form.returncode == 0 and statuses.read_text(encoding="utf-8").split() == ["201", "201"]


def test_every_curl_block_of_the_readme_answers_as_it_says(served_root: str, tmp_path: Path) -> None:
    blocks = curl_blocks(README.read_text(encoding="utf-8"))
    assert blocks, "the README shows no curl block to run"
    wrapper_dir = tmp_path / "bin"
    real_curl = curl_on_path(wrapper_dir)
    statuses = tmp_path / "statuses"
    state = tmp_path / "state.sh"
    state.write_text("", encoding="utf-8")
    environ = dict(os.environ)
    environ.update(
        {
            "PATH": f"{wrapper_dir}{os.pathsep}{environ.get('PATH', '')}",
            "REAL_CURL": real_curl,
            "CURL_STATUSES": str(statuses),
        }
    )

    for number, block in enumerate(blocks, 1):
        statuses.write_text("", encoding="utf-8")
        variables = " ".join(sorted(set(ASSIGNED.findall(block))))
        script = (
            f". {state}\nset -euo pipefail\n"
            + block.replace(README_ORIGIN, served_root)
            + (f'\nfor name in {variables}; do declare -p "$name"; done >> {state}\n' if variables else "")
        )
        done = run_command(["bash", "-c", script], cwd=tmp_path, env=environ, timeout=BLOCK_SECONDS)
        got = statuses.read_text(encoding="utf-8").split()
        want = expected_statuses(block)
        where = f"README curl block {number}:\n{block}\nstdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-2000:]}"

        assert done.returncode == 0, where
        assert len(got) == len(want), f"{len(got)} requests made, {len(want)} in the block; {where}"
        wrong = [(g, w) for g, w in zip(got, want, strict=True) if not matches(g, w)]
        assert wrong == [], f"statuses (got, README says) {wrong}; {where}"
