"""The bundle's pieces agree with each other: layer requirements, template and handlers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.cold_start_bench import function_environments
from devtools.template import ROOT, load_template, resources_of_type
from tests.support.model_functions import FUNCTIONS_THAT_CALL_A_MODEL


def test_runtime_is_python313_on_arm64_set_once_in_globals() -> None:
    template = load_template()
    globals_fn = template["Globals"]["Function"]
    assert globals_fn["Runtime"] == "python3.13"
    # arm64 unless sam local on an x86_64 machine overrides it; the layer follows the same parameter.
    assert globals_fn["Architectures"] == [{"Ref": "Architecture"}]
    architecture = template["Parameters"]["Architecture"]
    assert architecture["Default"] == "arm64" and architecture["AllowedValues"] == ["arm64", "x86_64"]
    layer = resources_of_type("AWS::Serverless::LayerVersion")["CommonLayer"]
    assert layer["Properties"]["CompatibleArchitectures"] == [{"Ref": "Architecture"}]
    assert layer["Metadata"]["BuildArchitecture"] == "arm64"
    for name, body in resources_of_type("AWS::Serverless::Function").items():
        assert "Runtime" not in body["Properties"], name
        assert "Architectures" not in body["Properties"], name


def test_layer_is_built_with_the_makefile_method() -> None:
    layer = resources_of_type("AWS::Serverless::LayerVersion")["CommonLayer"]
    assert layer["Metadata"]["BuildMethod"] == "makefile"
    assert (ROOT / "layers/common/python/lambda_agents/__init__.py").exists()


def test_every_table_is_billed_on_demand() -> None:
    for name, body in resources_of_type("AWS::DynamoDB::Table").items():
        assert body["Properties"]["BillingMode"] == "PAY_PER_REQUEST", name


def test_secrets_never_come_from_plain_template_parameters() -> None:
    template = load_template()
    for name in template["Parameters"]:
        # an SSM parameter's name, or a list of SSM parameters' ARNs: where a secret is, never the secret
        assert "key" not in name.lower() or name.endswith(("ParameterName", "ParameterArns")), name
        if name.endswith("ParameterArns"):
            assert template["Parameters"][name]["Type"] == "CommaDelimitedList", name
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    # Declared only so that sam local's --env-vars can set it; in AWS the key comes from SSM.
    assert variables["OPENAI_API_KEY"] == ""
    assert "OPENAI_API_KEY_PARAMETER" in variables
    for body in resources_of_type("AWS::Serverless::Function", template).values():
        assert "OPENAI_API_KEY" not in body["Properties"].get("Environment", {}).get("Variables", {})


def test_only_llm_functions_may_read_the_openai_key_parameter() -> None:
    for name, body in resources_of_type("AWS::Serverless::Function").items():
        policies = json.dumps(body["Properties"].get("Policies", []))
        assert ("${OpenAIApiKeyParameterName}" in policies) == (name in FUNCTIONS_THAT_CALL_A_MODEL), name


def _handler_module(body: dict[str, object]) -> str:
    code_uri = str(body["Properties"]["CodeUri"]).strip("/")  # type: ignore[index]
    return code_uri.replace("/", ".") + ".app"


def _existing_handlers(names: set[str]) -> list[str]:
    functions = resources_of_type("AWS::Serverless::Function")
    return sorted(
        name
        for name in names
        if (ROOT / _handler_module(functions[name]).replace(".", "/")).with_suffix(".py").exists()
    )


def _loaded_at_cold_start(logical_id: str) -> set[str]:
    """Every module the function's handler loads when imported in its own environment from the
    template (tracing off, the default), in a fresh interpreter as a cold start is."""
    module = _handler_module(resources_of_type("AWS::Serverless::Function")[logical_id])
    out = subprocess.run(
        [sys.executable, "-c", f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))"],
        check=False,
        capture_output=True,
        text=True,
        env=function_environments()[logical_id],
        cwd=Path(ROOT),
    )
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("logical_id", _existing_handlers(set(resources_of_type("AWS::Serverless::Function"))))
def test_no_tracing_sdk_at_cold_start_and_no_openai_in_a_function_that_calls_no_llm(logical_id: str) -> None:
    """In the function's own environment from the template (tracing off, the default)."""
    loaded = {name.split(".")[0] for name in _loaded_at_cold_start(logical_id)}
    assert not loaded & {"aws_xray_sdk", "opentelemetry"}
    assert ("openai" in loaded) is False or logical_id in FUNCTIONS_THAT_CALL_A_MODEL


@pytest.mark.parametrize("logical_id", ["ChatFunction", "InterviewFunction"])
def test_a_function_that_hands_turns_to_a_worker_does_not_load_the_workers_sqs_batch_utility(logical_id: str) -> None:
    """The request functions import ``answered_later`` for the decision and the 202; Powertools'
    batch utility, which only the workers use, cost them ~35 ms of cold start when it was imported
    with that module (measured: ChatFunction 941 ms of CPU against 904 ms on main, 911 ms with it
    imported in ``process_records`` only)."""
    assert "aws_lambda_powertools.utilities.batch" not in _loaded_at_cold_start(logical_id)


def test_every_dead_letter_queue_has_an_alarm_on_its_visible_messages() -> None:
    queues = resources_of_type("AWS::SQS::Queue")
    dead_letter = {
        json.dumps(body["Properties"]["RedrivePolicy"]["deadLetterTargetArn"])
        for body in queues.values()
        if "RedrivePolicy" in body.get("Properties", {})
    }
    watched = {
        json.dumps({"Fn::GetAtt": [dimension["Value"]["Fn::GetAtt"][0], "Arn"]})
        for alarm in resources_of_type("AWS::CloudWatch::Alarm").values()
        if alarm["Properties"].get("MetricName") == "ApproximateNumberOfMessagesVisible"
        for dimension in alarm["Properties"]["Dimensions"]
    }
    assert dead_letter and dead_letter <= watched


@pytest.mark.parametrize("logical_id", sorted(resources_of_type("AWS::Serverless::Function")))
def test_every_function_folder_says_it_has_no_dependencies_of_its_own(logical_id: str) -> None:
    """`sam build` warns "requirements.txt file not found" for a folder without one (13 lines of
    noise in `make test`); a file of comments tells it there is nothing to install, and anything
    a function imports must come from the layer, whose requirements are the locked ones."""
    code_uri = str(resources_of_type("AWS::Serverless::Function")[logical_id]["Properties"]["CodeUri"])
    requirements = ROOT / code_uri / "requirements.txt"

    assert requirements.is_file(), f"{requirements.relative_to(ROOT)} is missing"
    lines = [line.strip() for line in requirements.read_text(encoding="utf-8").splitlines()]
    assert [line for line in lines if line and not line.startswith("#")] == []
    assert any("layer" in line for line in lines), "say where the function's imports come from"
