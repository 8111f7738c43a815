"""docs/deploy.md's path from `sam deploy` to a first call runs as written where a local stand-in exists.

- The sign-in line (``TOKEN=$(.venv/bin/python -m devtools.sign_in ...)``) runs through bash, as
  written, against moto's cognito-idp and CloudFormation: a stack whose outputs name a pool built
  with the template's password policy and app client, and a user made as the guide makes it (its
  attributes read from the guide's ``admin-create-user`` line). The first sign-in answers the
  temporary password, then a new one the policy accepts; the second takes the new one. The token it
  prints is checked against moto's JSON Web Keys before it is printed, and here for its claims.
  (moto does not check the SRP proof itself, so a wrong password is Cognito's to refuse.)
- The signed admin call (``curl --aws-sigv4``) runs through bash, as written, against the local
  runner serving the template's API (`make serve`), which checks the signature's shape and scope.
- The rest of the guide's shape: the key never on the command line, the first user's verified
  e-mail, a teardown in order, the socket URL from the stack's outputs opened with the ID token.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer

from devtools.runner import LocalRunner, serving
from devtools.template import ROOT, load_template
from tests.support.commands import CURL_WRAPPER

GUIDE = ROOT / "docs" / "deploy.md"
REGION = "us-east-1"
STACK = "lambda-agents-dev"
USER = "someone@example.com"
TEMPORARY = "Temporary-Passw0rd!"
NEW = "A-new-Passw0rd-of-mine!"
FAKE_KEYS = {"AWS_ACCESS_KEY_ID": "AKIDGUIDEEXAMPLE", "AWS_SECRET_ACCESS_KEY": "guide-secret"}


def guide_blocks() -> list[str]:
    """The guide's ```sh blocks, continuations joined as the shell joins them."""
    return [
        block.replace("\\\n", " ") for block in re.findall(r"```sh\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)
    ]


def the_line(marker: str) -> str:
    found = [line for block in guide_blocks() for line in block.splitlines() if marker in line and line[:1] != "#"]
    assert len(found) == 1, f"docs/deploy.md shows {len(found)} lines with {marker!r}"
    return found[0].split("  # ", 1)[0]


def _claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


@pytest.fixture(scope="module")
def cognito() -> Iterator[dict[str, str]]:
    """moto on 127.0.0.1 holding what `sam deploy` made: the pool (the template's password policy),
    its SRP-only app client, a stack whose outputs name them, and the guide's first user."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{server.get_host_and_port()[1]}"
    keys = {"endpoint_url": url, "region_name": REGION, **{k.lower(): v for k, v in FAKE_KEYS.items()}}
    resources = load_template()["Resources"]
    try:
        idp = boto3.client("cognito-idp", **keys)
        declared = resources["UserPool"]["Properties"]
        pool = idp.create_user_pool(
            PoolName=STACK, Policies=declared["Policies"], UsernameAttributes=declared["UsernameAttributes"]
        )
        pool_id = pool["UserPool"]["Id"]
        flows = resources["UserPoolClient"]["Properties"]["ExplicitAuthFlows"]
        client = idp.create_user_pool_client(UserPoolId=pool_id, ClientName="app", ExplicitAuthFlows=flows)
        outputs = {
            "UserPoolId": {"Value": pool_id},
            "UserPoolClientId": {"Value": client["UserPoolClient"]["ClientId"]},
        }
        template = {"Resources": {"Placeholder": {"Type": "AWS::SQS::Queue"}}, "Outputs": outputs}
        boto3.client("cloudformation", **keys).create_stack(StackName=STACK, TemplateBody=json.dumps(template))
        created = the_line("admin-create-user")
        attributes = [{"Name": n, "Value": v} for n, v in re.findall(r"Name=(\w+),Value=(\S+)", created)]
        idp.admin_create_user(
            UserPoolId=pool_id, Username=USER, TemporaryPassword=TEMPORARY, UserAttributes=attributes,
            MessageAction="SUPPRESS",
        )  # fmt: skip
        with urllib.request.urlopen(f"{url}/{pool_id}/.well-known/jwks.json", timeout=30) as keys_answer:
            jwks = keys_answer.read().decode()
        yield {"AWS_ENDPOINT_URL": url, "COGNITO_JWKS": jwks}
    finally:
        server.stop()


def _bash(script: str, environment: dict[str, str], cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    kept = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "PYTHONPATH"}
    return subprocess.run(
        ["bash", "-c", f"set -euo pipefail\n{script}"],
        cwd=cwd, env={**kept, **environment}, input=stdin, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip


def test_the_guide_shows_the_key_off_the_command_line_a_verified_first_user_and_a_teardown() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    put = the_line("put-parameter --name /lambda-agents/openai-api-key")

    assert "--value file://" in put and "$OPENAI" not in put
    assert "read -rs" in text and "rm -f openai-key.txt" in text
    assert "Name=email_verified,Value=true" in the_line("admin-create-user")
    assert "about 50 e-mails a day" in text and "SES" in text
    teardown = text.split("## Teardown", 1)[1].split("\n## ", 1)[0]
    order = [
        "sam delete",
        "--no-deletion-protection-enabled",
        "delete-table",
        "--deletion-protection INACTIVE",
        "delete-user-pool",
    ]
    positions = [teardown.find(step) for step in order]
    assert -1 not in positions and positions == sorted(positions), dict(zip(order, positions, strict=True))
    assert "SOCKET_URL=$(output SocketUrl)" in text, "the guide names the stack's WebSocket URL"
    assert '"$SOCKET_URL?idToken=$TOKEN"' in text, "the guide connects to the socket with the signed-in user's ID token"


def test_the_sign_in_line_prints_an_id_token_after_a_first_sign_in_that_sets_a_new_password(
    cognito: dict[str, str], tmp_path: Path
) -> None:
    line = the_line("-m devtools.sign_in")
    environment = {"STACK": STACK, "AWS_REGION": REGION, **FAKE_KEYS, **cognito}
    script = f'{line}\nprintf "%s" "$TOKEN" > "{tmp_path}/token"'

    first = _bash(script, environment, ROOT, stdin=f"{TEMPORARY}\n{NEW}\n")
    assert first.returncode == 0, first.stderr[-3000:]
    first_token = (tmp_path / "token").read_text(encoding="utf-8")
    again = _bash(script, environment, ROOT, stdin=f"{NEW}\n")
    assert again.returncode == 0, again.stderr[-3000:]

    claims = _claims((tmp_path / "token").read_text(encoding="utf-8"))
    assert claims["token_use"] == "id" and claims["sub"]
    assert _claims(first_token)["token_use"] == "id"
    assert "new password" in first.stderr and "new password" not in again.stderr
    assert NEW not in first.stderr + first.stdout and TEMPORARY not in first.stderr + first.stdout


def test_the_sign_in_without_a_stack_it_can_read_says_so_in_a_line(cognito: dict[str, str], tmp_path: Path) -> None:
    done = _bash(
        ".venv/bin/python -m devtools.sign_in --stack no-such-stack --user x@example.com",
        {"AWS_REGION": REGION, **FAKE_KEYS, **cognito},
        ROOT,
    )

    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "no-such-stack" in done.stderr


@pytest.mark.skipif(shutil.which("curl") is None, reason="the guide's signed call needs curl 7.75+ (--aws-sigv4)")
def test_the_signed_admin_call_is_answered_by_the_runner_as_written(tmp_path: Path) -> None:
    block = next(block for block in guide_blocks() if "--aws-sigv4" in block)
    # From the signed curl to the block's end, as written (its JSON body spans lines inside its quotes);
    # the line before it exports a profile's keys with the AWS CLI, which a local run does not need.
    call = block[block.index("curl ") :]
    expected = re.search(r"#\s*->\s*(\d{3})", block)
    assert expected is not None, "the guide names no status for its signed call"
    wrappers = tmp_path / "bin"
    wrappers.mkdir()
    (wrappers / "curl").write_text(CURL_WRAPPER, encoding="utf-8")
    (wrappers / "curl").chmod(0o755)
    statuses = tmp_path / "statuses"

    with LocalRunner(environ={"AWS_DEFAULT_REGION": REGION}) as runner, serving(runner) as url:
        environment = {
            "API_URL": f"{url}/v1",
            "AWS_REGION": REGION,
            **FAKE_KEYS,
            "AWS_SESSION_TOKEN": "a-session-token",
            "PATH": f"{wrappers}{os.pathsep}{os.environ.get('PATH', '')}",
            "REAL_CURL": str(shutil.which("curl")),
            "CURL_STATUSES": str(statuses),
        }
        done = _bash(call, environment, tmp_path)

    assert done.returncode == 0, done.stderr[-2000:]
    assert statuses.read_text(encoding="utf-8").split() == [expected.group(1)], done.stdout[-2000:]
    assert json.loads(done.stdout)["ruleIndex"] == 1
