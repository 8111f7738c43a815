"""template.yaml as CloudFormation deploys it: AWS::LanguageExtensions applied (its loops expanded,
by ``devtools.template.load_template``), then transformed by the SAM translator (what `sam build` /
`sam deploy` run), then with the template's conditions decided for a set of parameter values, so
a test reads what a deployment with those values would create.

The translator runs in the SAM CLI's own environment (`.tools/sam`, installed by `make template`
and `make build`, which `make test` runs first): it pins pydantic ~=2.13, and the product's lock
must not be held back to it.

Local ``CodeUri`` / ``ContentUri`` become ``s3://`` locations first, as `sam package` does; the
managed-policy map is empty because the template names no managed policy by name.
"""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Mapping
from functools import cache
from typing import Any

import pytest

from devtools.runner_template import IntrinsicResolver
from devtools.template import ROOT, load_template

SAM_PYTHON = ROOT / ".tools" / "sam" / "bin" / "python"
TRANSLATE = """
import json, sys
import boto3
from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator
template, region, values = json.load(sys.stdin), sys.argv[1], json.loads(sys.argv[2])
translator = Translator({}, Parser(), boto_session=boto3.session.Session(region_name=region))
output = translator.translate(template, parameter_values={**values, "AWS::Region": region}, get_managed_policy_map=dict)
json.dump(output, sys.stdout)
"""

REGION = "us-east-1"
NO_VALUE = {"Ref": "AWS::NoValue"}


# The parameters SAM itself reads while it translates (``Tracing`` decides the X-Ray policy): passed
# to the translator, as CloudFormation passes a deployment's values to the transform.
TRANSLATION_PARAMETERS = ("TracingMode",)


@cache
def _transformed(translation_parameters: str = "{}") -> str:
    template = copy.deepcopy(load_template())
    for body in template["Resources"].values():
        properties = body.get("Properties", {})
        for key in ("CodeUri", "ContentUri"):
            if isinstance(properties.get(key), str):
                properties[key] = f"s3://artifacts/{properties[key]}"
    if not SAM_PYTHON.exists():
        pytest.fail(f"{SAM_PYTHON} is missing: run `make template` (it installs the SAM CLI) first")
    done = subprocess.run(
        [str(SAM_PYTHON), "-I", "-c", TRANSLATE, REGION, translation_parameters],
        input=json.dumps(template),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"AWS_DEFAULT_REGION": REGION, "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


def transformed(parameters: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The transformed template, every ``Fn::If`` decided for ``parameters`` (defaults otherwise)."""
    values = {name: value for name, value in (parameters or {}).items() if name in TRANSLATION_PARAMETERS}
    template: dict[str, Any] = json.loads(_transformed(json.dumps(values, sort_keys=True)))
    resolver = IntrinsicResolver(load_template(), region=REGION, parameter_overrides=dict(parameters or {}))
    decided = _decide(template, resolver)
    decided["Resources"] = {
        name: body
        for name, body in decided["Resources"].items()
        if "Condition" not in body or resolver.condition(body["Condition"])
    }
    return decided


def _decide(value: Any, resolver: IntrinsicResolver) -> Any:
    if isinstance(value, list):
        items = [_decide(item, resolver) for item in value]
        return [item for item in items if item != NO_VALUE]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Fn::If"}:
        name, when_true, when_false = value["Fn::If"]
        return _decide(when_true if resolver.condition(name) else when_false, resolver)
    decided = {key: _decide(item, resolver) for key, item in value.items()}
    return {key: item for key, item in decided.items() if item != NO_VALUE}


def resources(template: Mapping[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {name: body for name, body in template["Resources"].items() if body["Type"] == resource_type}


def role_of(template: Mapping[str, Any], function: str) -> dict[str, Any]:
    role = template["Resources"][function]["Properties"]["Role"]["Fn::GetAtt"][0]
    return dict(template["Resources"][role]["Properties"])


def statements_of(template: Mapping[str, Any], function: str) -> list[dict[str, Any]]:
    """Every inline policy statement of the function's role."""
    return [
        statement
        for policy in role_of(template, function).get("Policies", [])
        for statement in policy["PolicyDocument"]["Statement"]
    ]


def granted(template: Mapping[str, Any], function: str) -> dict[str, set[str]]:
    """Resource (as its JSON) -> the actions the function's inline statements allow on it."""
    grants: dict[str, set[str]] = {}
    for statement in statements_of(template, function):
        assert statement["Effect"] == "Allow", statement
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        targets = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        for target in targets:
            grants.setdefault(json.dumps(target, sort_keys=True), set()).update(actions)
    return grants
