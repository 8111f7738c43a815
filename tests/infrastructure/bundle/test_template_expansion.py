"""template.yaml writes each thing once: the alarms, log groups and queues of each
function and queue come from Fn::ForEach loops, a setting two functions share from one Mappings
entry or parameter. Every reader takes it through AWS::LanguageExtensions
(devtools.language_extensions); here that expansion is held to cfn-lint's own, the SAM CLI is
told to expand it in every command that reads it, and what the loops make is held to the rules the
copies followed (an alarm exists with its function only)."""

from __future__ import annotations

import copy
import json
import tomllib
from collections import defaultdict
from typing import Any

import pytest
from cfnlint.decode import decode
from cfnlint.template import Template
from cfnlint.template.transforms._language_extensions import language_extension

from devtools.template import ROOT, TEMPLATE_PATH, load_template, read_template
from tests.support.sam_template import resources, transformed


def test_every_reader_gets_the_template_without_a_loop_or_a_mapping_lookup_left() -> None:
    written = read_template(TEMPLATE_PATH)
    read = load_template()

    assert written["Transform"] == ["AWS::LanguageExtensions", "AWS::Serverless-2016-10-31"]  # this order only
    assert any(key.startswith("Fn::ForEach::") for key in written["Resources"])
    assert read["Transform"] == "AWS::Serverless-2016-10-31"
    text = json.dumps(read)
    assert "Fn::ForEach" not in text and "Fn::FindInMap" not in text


def test_the_expansion_is_cfn_lints_own() -> None:
    """cfn-lint (AWS's linter, `make template`) expands the loops itself before it checks them: the
    resources and outputs it checks are the ones every reader here reads."""
    decoded, problems = decode(str(TEMPLATE_PATH))
    assert problems == []
    transform_problems, linted = language_extension(Template(str(TEMPLATE_PATH), decoded, ["us-east-1"]))
    assert transform_problems == []
    linted = json.loads(json.dumps(linted))  # cfn-lint's str / dict nodes as plain JSON
    read = load_template()

    assert linted["Resources"] == read["Resources"]
    assert linted["Outputs"] == read["Outputs"]
    assert set(linted["Conditions"]) == set(read["Conditions"])


@pytest.mark.parametrize("environment", ["default", "x86_64", "prod"])
def test_every_sam_command_of_every_environment_expands_the_loops(environment: str) -> None:
    # The SAM CLI expands AWS::LanguageExtensions only when told to; without it sam build, sam
    # validate and the sam local commands fail on the loops (tests/infrastructure/sam_local asks
    # the SAM CLI itself what sam local makes of the template with this setting).
    config = tomllib.loads((ROOT / "samconfig.toml").read_text(encoding="utf-8"))[environment]

    assert config["global"]["parameters"]["language_extensions"] is True
    for command, sections in config.items():
        assert sections["parameters"].get("language_extensions", True) is True, command


def test_no_setting_is_written_twice_in_the_functions_environments() -> None:
    """A value two functions read alike is one Mappings entry or parameter, not two literals that
    can drift apart (NUDGE_MAX_SLOTS was written three times)."""
    written: dict[tuple[str, str], list[str]] = defaultdict(list)
    for name, body in read_template(TEMPLATE_PATH)["Resources"].items():
        if not name.startswith("Fn::ForEach::") and body["Type"] == "AWS::Serverless::Function":
            for variable, value in body["Properties"].get("Environment", {}).get("Variables", {}).items():
                if isinstance(value, (str, int, float)) and variable != "POWERTOOLS_SERVICE_NAME":
                    written[(variable, str(value))].append(name)

    assert {setting: names for setting, names in written.items() if len(names) > 1} == {}


def test_the_shared_settings_reach_every_function_that_reads_them() -> None:
    functions = resources(load_template(), "AWS::Serverless::Function")

    def variable(function: str, name: str) -> Any:
        return functions[function]["Properties"]["Environment"]["Variables"][name]

    for function in ("NudgeSchedulerFunction", "NudgeGeneratorFunction", "NudgeBatchFunction"):
        assert variable(function, "NUDGE_MAX_SLOTS") == {"Ref": "NudgeMaxSlots"}
    assert load_template()["Parameters"]["NudgeMaxSlots"]["Default"] == 15
    for first, second in [("ChatFunction", "ChatAnswerFunction"), ("InterviewFunction", "InterviewTurnFunction")]:
        own = functions[first]["Properties"]["Environment"]["Variables"]
        shared = set(own) & set(functions[second]["Properties"]["Environment"]["Variables"])
        assert {name: variable(second, name) for name in shared} == {name: own[name] for name in shared}
    queues = resources(load_template(), "AWS::SQS::Queue")
    for queue, function, name in [
        ("NudgeQueue", "NudgeGeneratorFunction", "NUDGE_MAX_RECEIVE_COUNT"),
        ("ChatAnswersQueue", "ChatAnswerFunction", "CHAT_ANSWERS_MAX_RECEIVE_COUNT"),
        ("InterviewTurnsQueue", "InterviewTurnFunction", "INTERVIEW_TURNS_MAX_RECEIVE_COUNT"),
    ]:
        assert variable(function, name) == queues[queue]["Properties"]["RedrivePolicy"]["maxReceiveCount"]


def test_the_batch_api_functions_loop_is_the_other_functions_loop_under_its_condition() -> None:
    # Two loops only because the SAM CLI cannot take a Condition from a mapping: the one written
    # for NudgeBatchFunction may differ from the others' in its Condition, and in its group's name,
    # which the stack chooses (stacks ran that function before its group existed: Lambda had made
    # the group of the usual name, test_data_safety_and_alarms says more).
    written = read_template(TEMPLATE_PATH)["Resources"]
    _, every_other, fragment = written["Fn::ForEach::FunctionLogsAndAlarms"]
    _, batch_api, conditional = written["Fn::ForEach::BatchApiFunctionLogsAndAlarms"]
    functions = {name.removesuffix("Function") for name in resources(load_template(), "AWS::Serverless::Function")}
    conditional = copy.deepcopy(conditional)
    stack_named = conditional["${Function}Logs"]["Properties"].pop("LogGroupName")
    fragment = copy.deepcopy(fragment)
    del fragment["${Function}Logs"]["Properties"]["LogGroupName"]

    assert stack_named == {"Fn::Sub": "/aws/lambda/${AWS::StackName}/${Function}Function"}
    assert {name: {**body, "Condition": "FanoutUsesBatchApi"} for name, body in fragment.items()} == conditional
    assert batch_api == ["NudgeBatch"] and load_template()["Resources"]["NudgeBatchFunction"]["Condition"] == (
        "FanoutUsesBatchApi"
    )
    assert sorted([*every_other, *batch_api]) == sorted(functions)


@pytest.mark.parametrize("mode", ["sync", "batch", "batch_then_sync"])
def test_an_alarm_or_log_group_exists_only_with_the_function_or_queue_it_watches(mode: str) -> None:
    # A loop's copy carries its function's Condition or none: NudgeBatchFunction's alarms and log
    # group exist only in the Batch API modes, with it.
    template = transformed({"NudgeFanoutMode": mode})
    present = set(template["Resources"]) | set(template["Parameters"])
    watched = set()
    for body in [
        *resources(template, "AWS::CloudWatch::Alarm").values(),
        *resources(template, "AWS::Logs::LogGroup").values(),
    ]:
        for found in _references(body["Properties"]):
            assert found in present, (mode, found)
            watched.add(found)
    functions = set(resources(template, "AWS::Lambda::Function"))
    assert functions <= watched
    assert ("NudgeBatchFunction" in functions) == (mode != "sync")


def _references(value: Any) -> list[str]:
    if isinstance(value, list):
        return [found for item in value for found in _references(item)]
    if not isinstance(value, dict):
        return []
    if set(value) == {"Ref"}:
        return [value["Ref"]] if not value["Ref"].startswith("AWS::") else []
    if set(value) == {"Fn::GetAtt"}:
        return [value["Fn::GetAtt"][0]]
    return [found for item in value.values() for found in _references(item)]
