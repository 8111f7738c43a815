"""`make test-sam-local`'s suite: the functions run by the real SAM CLI in Docker containers.

scripts/test-sam-local.sh prepares what it needs (Docker Engine, the Lambda Python 3.13 base image
built here, `sam build --config-env x86_64`) and runs it with ``-m docker``; `make test` never
collects it (pyproject.toml's addopts deselect the marker). Missing Docker or a missing build is
a failure here, never a skip, and a skipped test fails the run.

The functions reach the endpoint of `make sam-local-endpoint` (served here on a free port, on
127.0.0.1 and on Docker's bridge) as ``host.docker.internal``, exactly as with the committed
sam-local.env.json; only the port differs.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from devtools.fake_openai import FakeOpenAIServer
from devtools.sam_local import CONTAINERS_HOST, DOCKER_BRIDGE, env_file_document, interface_address, serve_endpoint
from devtools.template import ROOT

SAM = ROOT / ".tools" / "bin" / "sam"
BUILT_TEMPLATE = ROOT / ".aws-sam" / "build-x86_64" / "template.yaml"
REGION = "us-east-1"
# sam local invoke: SAM's start, the image with the layer, the container, the function's cold start.
INVOKE_TIMEOUT_S = 300
_SKIPPED: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and report.nodeid.startswith("tests/docker/"):
        _SKIPPED.append(report.nodeid)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A skipped sam local test is a failed run: nothing here may be left unproven quietly."""
    if _SKIPPED and exitstatus == pytest.ExitCode.OK:
        print(f"\n[tests/docker] {len(_SKIPPED)} test(s) skipped, which fails the run: {_SKIPPED}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@dataclass(frozen=True)
class Invocation:
    """What `sam local invoke` printed: the function's result (stdout) and the logs (stderr)."""

    result: Any
    logs: str


@dataclass
class LocalAws:
    """The sam-local endpoint: this machine reaches it on ``url``, the containers on ``for_containers``."""

    url: str
    for_containers: str
    bridge: str

    def client(self, service: str) -> Any:
        keys = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
        return boto3.client(service, endpoint_url=self.url, region_name=REGION, **keys)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def docker_bridge() -> str:
    if subprocess.run(["docker", "info"], capture_output=True, check=False).returncode != 0:
        pytest.fail("no Docker Engine answers: run `make test-sam-local`, which starts one")
    if not BUILT_TEMPLATE.exists():
        pytest.fail(f"{BUILT_TEMPLATE} is missing: run `make test-sam-local` (it runs sam build --config-env x86_64)")
    bridge = interface_address(DOCKER_BRIDGE)
    if bridge is None:
        pytest.fail(f"Docker's bridge {DOCKER_BRIDGE} has no address: the containers could not reach the endpoint")
    return bridge


@pytest.fixture(scope="session")
def local_aws(docker_bridge: str) -> Iterator[LocalAws]:
    servers, url = serve_endpoint(0, also_on=[docker_bridge])
    try:
        yield LocalAws(url=url, for_containers=f"http://{CONTAINERS_HOST}:{servers.port}", bridge=docker_bridge)
    finally:
        servers.stop()


def write_env_file(path: Path, endpoint: str, overrides: Mapping[str, Mapping[str, str]] | None = None) -> Path:
    """sam-local.env.json for ``endpoint``, with some functions' variables overridden."""
    document = env_file_document(endpoint)
    for function_id, variables in (overrides or {}).items():
        document[function_id] = {**document.get(function_id, {}), **variables}
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def env_file(local_aws: LocalAws, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_env_file(tmp_path_factory.mktemp("sam-local") / "env.json", local_aws.for_containers)


def sam_environment() -> dict[str, str]:
    """The shell sam runs in: no AWS profile or keys of the developer's (sam local passes the
    shell's credentials to the containers), telemetry off."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "OPENAI_"))}
    return {**environment, "AWS_DEFAULT_REGION": REGION, "SAM_CLI_TELEMETRY": "0"}


def sam_local_invoke(
    function_id: str,
    event: Any,
    env_file: Path,
    workdir: Path,
    parameter_overrides: Sequence[str] = (),
) -> Invocation:
    """`sam local invoke --config-env x86_64 <function> -e <event>`, as the README shows it."""
    event_file = workdir / f"{function_id}-event.json"
    event_file.write_text(json.dumps(event), encoding="utf-8")
    command = [str(SAM), "local", "invoke", "--config-env", "x86_64", function_id]
    command += ["--event", str(event_file), "--env-vars", str(env_file)]
    if parameter_overrides:
        command += ["--parameter-overrides", " ".join(["Architecture=x86_64", *parameter_overrides])]
    done = subprocess.run(
        command,
        cwd=ROOT,
        env=sam_environment(),
        capture_output=True,
        text=True,
        timeout=INVOKE_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, f"sam local invoke {function_id} exited {done.returncode}:\n{done.stderr[-4000:]}"
    assert "SAM_CONTAINER_ID" in done.stderr, f"no container ran {function_id}:\n{done.stderr[-4000:]}"
    assert "REPORT RequestId" in done.stderr, f"the runtime did not report {function_id}:\n{done.stderr[-4000:]}"
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"{function_id} printed no JSON result: {done.stdout!r}\n{done.stderr[-4000:]}")
    return Invocation(result=result, logs=done.stderr)


@pytest.fixture
def invoke(local_aws: LocalAws, env_file: Path, tmp_path: Path) -> Any:
    """sam local invoke with the suite's env file, or with some of the function's variables
    changed (a file of its own) and some template parameters given."""

    def run(
        function_id: str, event: Any, variables: Mapping[str, str] | None = None, parameters: Sequence[str] = ()
    ) -> Invocation:
        used = env_file
        if variables:
            used = write_env_file(tmp_path / "env.json", local_aws.for_containers, {function_id: variables})
        return sam_local_invoke(function_id, event, used, tmp_path, parameters)

    return run


@pytest.fixture
def fake_provider(local_aws: LocalAws) -> Iterator[FakeOpenAIServer]:
    """The fake OpenAI server where the containers reach it: Docker's bridge."""
    with FakeOpenAIServer(host=local_aws.bridge) as server:
        yield server


def openai_mode(provider: FakeOpenAIServer) -> dict[str, str]:
    """A function's variables for the real openai client against the fake provider, as containers
    reach it. OPENAI_BASE_URL is declared under a condition sam local leaves unresolved (it sets
    such a variable blank), so the env file can set it."""
    port = provider.base_url.rsplit(":", 1)[1].split("/", 1)[0]
    return {
        "AI_AGENT_MODE": "openai",
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": f"http://{CONTAINERS_HOST}:{port}/v1",
    }


@dataclass
class StartedApi:
    """A running `sam local start-api` on 127.0.0.1."""

    url: str
    process: subprocess.Popen[str]
    log: Path


def start_api(env_file: Path, log: Path, port: int) -> StartedApi:
    command = [str(SAM), "local", "start-api", "--config-env", "x86_64", "--env-vars", str(env_file)]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    handle = log.open("w", encoding="utf-8")
    process = subprocess.Popen(
        command, cwd=ROOT, env=sam_environment(), stdout=handle, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"sam local start-api exited {process.returncode}:\n{log.read_text()[-4000:]}")
        if "Running on http://127.0.0.1" in log.read_text(encoding="utf-8", errors="replace"):
            return StartedApi(url=f"http://127.0.0.1:{port}", process=process, log=log)
        time.sleep(0.5)
    stop_api(process)
    pytest.fail(f"sam local start-api did not start within 120 s:\n{log.read_text()[-4000:]}")


def stop_api(process: subprocess.Popen[str]) -> None:
    """Ctrl-C, as a developer stops it: the SAM CLI then removes its warm containers."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


@pytest.fixture(scope="module")
def api(env_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StartedApi]:
    started = start_api(env_file, tmp_path_factory.mktemp("start-api") / "sam.log", free_port())
    try:
        yield started
    finally:
        stop_api(started.process)
