"""`sam local invoke` / `sam local start-api` run every function in mock mode on the local endpoint.

Docker does not run here, so the container itself cannot be started. Everything around it is
checked with the SAM CLI's own code (sam_local_probe.py beside this file, run in .tools/sam): the environment
it gives each function with sam-local.env.json, and the events start-api builds. The handlers are
then run in this process with exactly that environment against the endpoint of
`make sam-local-endpoint`: what is left untested is Docker, not our configuration.
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools.runner_lambda import InProcessLambda, import_handler_from
from devtools.runner_template import IntrinsicResolver, function_environment, function_specs, route_specs
from devtools.sam_local import DEFAULT_ENDPOINT, ENV_FILE, env_file_document, serve_endpoint
from devtools.template import ROOT, load_template, resources_of_type
from tests.integration.events.test_event_files import EVENT_FILES, REJECTED_AS_UNAUTHENTICATED, target_function

pytestmark = pytest.mark.integration

SAM_PYTHON = ROOT / ".tools" / "sam" / "bin" / "python"
PROBE = Path(__file__).with_name("sam_local_probe.py")
FUNCTIONS = function_specs(load_template())
TABLES = set(resources_of_type("AWS::DynamoDB::Table"))
QUEUES = set(resources_of_type("AWS::SQS::Queue"))
# The Batch API mode, where every function exists: the SAM CLI's expansion hands a function whose
# Condition is false (NudgeBatchFunction in the default sync mode) none of its references, no table
# and no parameter, as `sam local invoke` does without --parameter-overrides NudgeFanoutMode=batch.
EVERY_FUNCTION = {"NudgeFanoutMode": "batch"}
MODE = [f"--parameter={name}={value}" for name, value in EVERY_FUNCTION.items()]


def _sam(*args: str) -> Any:
    if not SAM_PYTHON.exists():
        pytest.fail(f"{SAM_PYTHON} is missing: run `make build` (it installs the SAM CLI) first")
    # A clean shell: sam local lets the shell's values win over the template's, not over the file's.
    shell = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), "AWS_DEFAULT_REGION": "us-east-1"}
    done = subprocess.run(
        [str(SAM_PYTHON), str(PROBE), *args], capture_output=True, text=True, timeout=300, env=shell, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_committed_env_file_is_the_one_the_template_gives() -> None:
    committed = json.loads(ENV_FILE.read_text(encoding="utf-8"))

    assert committed == env_file_document(), "sam-local.env.json is stale: run `make sam-local-env`"


def test_samconfig_runs_the_sam_local_commands_with_the_env_file_and_has_dev_and_prod_stacks() -> None:
    config = tomllib.loads((ROOT / "samconfig.toml").read_text(encoding="utf-8"))

    for environment in ("default", "x86_64"):
        for command in ("local_invoke", "local_start_api"):
            parameters = config[environment][command]["parameters"]
            assert (ROOT / parameters["env_vars"]).resolve() == ENV_FILE
            # The SAM CLI runs containers on Docker's bridge whatever docker_network says ("host"
            # included): they reach the endpoint as host.docker.internal, mapped on Linux.
            assert parameters["add_host"] == ["host.docker.internal:host-gateway"]
            assert "docker_network" not in parameters
    x86_64 = config["x86_64"]
    assert x86_64["build"]["parameters"]["parameter_overrides"] == "Architecture=x86_64"
    built = x86_64["build"]["parameters"]["build_dir"]
    for command in ("local_invoke", "local_start_api"):
        parameters = x86_64[command]["parameters"]
        assert parameters["parameter_overrides"] == "Architecture=x86_64"
        assert parameters["template_file"] == f"{built}/template.yaml"
        assert parameters["skip_pull_image"] is True
    stacks = {config[env]["global"]["parameters"]["stack_name"] for env in ("default", "prod")}
    assert stacks == {"lambda-agents-dev", "lambda-agents-prod"}
    assert config["prod"]["deploy"]["parameters"]["confirm_changeset"] is True


@pytest.fixture(scope="module")
def sam_environments() -> dict[str, dict[str, str]]:
    environments: dict[str, dict[str, str]] = _sam("env", str(ROOT / "template.yaml"), str(ENV_FILE), *MODE)
    return environments


@pytest.mark.parametrize("logical_id", sorted(FUNCTIONS))
def test_sam_local_gives_each_function_mock_mode_the_local_endpoint_and_real_names(
    sam_environments: dict[str, dict[str, str]], logical_id: str
) -> None:
    environment = sam_environments[logical_id]
    declared = resources_of_type("AWS::Serverless::Function")[logical_id]["Properties"]["Environment"]["Variables"]

    assert environment["AWS_SAM_LOCAL"] == "true"
    assert environment["AI_AGENT_MODE"] == "mock"
    assert environment["AWS_ENDPOINT_URL_DYNAMODB"] == DEFAULT_ENDPOINT
    assert environment["AWS_ENDPOINT_URL_SQS"] == DEFAULT_ENDPOINT
    assert environment["AWS_ENDPOINT_URL_EVENTBRIDGE"] == DEFAULT_ENDPOINT
    # Declared under a condition, which sam local leaves unresolved and sets blank: the file sets it
    # as AWS does with tracing off.
    assert environment["OTEL_SDK_DISABLED"] == "true"
    assert environment["OPENAI_BASE_URL"] == ""  # also conditional: blank, which counts as unset
    for variable, value in declared.items():
        ref = value.get("Ref") if isinstance(value, dict) else None
        if "SOCKET_API_ENDPOINT" in declared and variable in {"SOCKET_API_ENDPOINT", "CONNECTIONS_TABLE"}:
            # sam local serves no WebSocket API: both blank, so the function pushes nothing.
            assert environment[variable] == "", (variable, environment[variable])
        elif ref in TABLES:
            assert environment[variable] == ref  # the table of that name on the local endpoint
        elif ref in QUEUES:
            assert environment[variable].startswith(f"{DEFAULT_ENDPOINT}/"), (variable, environment[variable])


def test_sam_local_expands_the_templates_loops_into_the_resources_every_reader_reads() -> None:
    """The SAM CLI, told by samconfig.toml to expand AWS::LanguageExtensions, makes of the loops
    the resources devtools.template makes: each with its type and its Condition."""
    expanded: dict[str, Any] = _sam("expand", str(ROOT / "template.yaml"), *MODE)

    def shape(template: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
        return {name: (body["Type"], body.get("Condition")) for name, body in template["Resources"].items()}

    assert shape(expanded) == shape(load_template())


@pytest.mark.parametrize("logical_id", sorted(FUNCTIONS))
def test_sam_local_gives_each_function_the_settings_the_local_runner_gives_it(
    sam_environments: dict[str, dict[str, str]], logical_id: str
) -> None:
    # Both take the template's mappings and parameters through the transform: every variable the
    # runner sets from the template has its value under sam local too, but what sam-local.env.json
    # sets and the queues' URLs (each tool's own endpoint).
    template = load_template()
    queues = {name: f"queue:{name}" for name in QUEUES}
    resolver = IntrinsicResolver(template, region="us-east-1", queue_urls=queues, parameter_overrides=EVERY_FUNCTION)
    env_file = json.loads(ENV_FILE.read_text(encoding="utf-8"))
    overridden = set(env_file["Parameters"]) | set(env_file.get(logical_id, {}))
    expected = {
        name: value
        for name, value in function_environment(template, logical_id, resolver).items()
        if name not in overridden and not value.startswith("queue:")
    }

    assert {name: sam_environments[logical_id].get(name) for name in expected} == expected


@pytest.fixture(scope="module")
def local_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, dict[str, str]]]]:
    """`make sam-local-endpoint` on a free port, and SAM's environments pointing at it."""
    server, url = serve_endpoint(0)
    env_file = tmp_path_factory.mktemp("sam-local") / "env.json"
    env_file.write_text(json.dumps(env_file_document(url)), encoding="utf-8")
    try:
        yield url, _sam("env", str(ROOT / "template.yaml"), str(env_file), *MODE)
    finally:
        urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/reset", method="POST"), timeout=10).close()
        server.stop()


@pytest.fixture(scope="module")
def lambda_runtime() -> InProcessLambda:
    return InProcessLambda(import_handler_from(ROOT), "us-east-1")


@pytest.mark.parametrize("path", EVENT_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_given_sam_locals_environment_when_each_sample_event_is_invoked_then_the_function_answers(
    local_endpoint: tuple[str, dict[str, dict[str, str]]], lambda_runtime: InProcessLambda, path: Path
) -> None:
    _, environments = local_endpoint
    event = json.loads(path.read_text(encoding="utf-8"))
    function_id = target_function(path, event)

    result = lambda_runtime.invoke(FUNCTIONS[function_id], event, environments[function_id])

    if "httpMethod" in event:
        expected_401 = bool(REJECTED_AS_UNAUTHENTICATED.search(path.name))
        assert (result["statusCode"] == 401) == expected_401, result
        assert result["statusCode"] < 500, result


def _start_api_event(method: str, path: str, headers: list[str], body: str | None = None) -> dict[str, Any]:
    routes = [r for r in route_specs(load_template()) if r.method == method]
    (route,) = [r for r in routes if len(r.path.split("/")) == len(path.split("/")) and _fits(r.path, path)]
    args = ["event", method, route.path, path, *(f"--header={h}" for h in headers)]
    if body is not None:
        args.append(f"--body={body}")
    event: dict[str, Any] = _sam(*args)
    return event


def _fits(template_path: str, path: str) -> bool:
    return all(t.startswith("{") or t == p for t, p in zip(template_path.split("/"), path.split("/"), strict=True))


@pytest.mark.parametrize(
    ("method", "path", "identity", "body", "function_id"),
    [
        ("POST", "/ai-agent/sessions", "X-Local-User:user-1", '{"context": {"goal": "a report"}}', "ChatFunction"),
        ("GET", "/process-templates", "X-Local-User:user-1", None, "ProcessTemplatesFunction"),
        ("GET", "/api/admin/x/pending", "X-Local-Admin:release-bot", None, "PendingPostsFunction"),
    ],
)
def test_given_start_apis_event_when_a_local_identity_header_is_sent_then_it_counts_under_sam_local_only(
    local_endpoint: tuple[str, dict[str, dict[str, str]]],
    lambda_runtime: InProcessLambda,
    method: str,
    path: str,
    identity: str,
    body: str | None,
    function_id: str,
) -> None:
    _, environments = local_endpoint
    headers = [identity, "Content-Type:application/json"]
    event = _start_api_event(method, path, headers, body)
    under_sam_local = environments[function_id]
    deployed = {**under_sam_local, "AWS_SAM_LOCAL": ""}

    with_switch = lambda_runtime.invoke(FUNCTIONS[function_id], event, under_sam_local)
    without_switch = lambda_runtime.invoke(FUNCTIONS[function_id], event, deployed)
    anonymous = lambda_runtime.invoke(FUNCTIONS[function_id], _start_api_event(method, path, [], body), under_sam_local)

    assert with_switch["statusCode"] < 300, with_switch
    assert without_switch["statusCode"] == 401
    assert anonymous["statusCode"] == 401
