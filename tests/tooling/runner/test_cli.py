"""The CLI as `make invoke` / `make serve` use it: JSON result alone on stdout, logs on stderr."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from devtools.template import ROOT

from .fake_app import write_app

pytestmark = pytest.mark.integration

TEMPLATE = """\
Globals:
  Function:
    Handler: app.lambda_handler
    Timeout: 10
    Environment:
      Variables:
        GREETING: !Sub "hello from ${AWS::Region}"
Resources:
  HelloFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: cli_handlers/hello/
      Events:
        Hello:
          Type: Api
          Properties:
            Path: /hello/{name}
            Method: GET
        Tick:
          Type: Schedule
          Properties:
            Schedule: rate(1 hour)
  BrokenFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: cli_handlers/broken/
"""

HELLO = """
import json, os, sys
def lambda_handler(event, context):
    print("a log line on stdout, as Powertools writes them")
    print("a log line on stderr", file=sys.stderr)
    name = (event.get("pathParameters") or {}).get("name", "world")
    body = {"greeting": os.environ["GREETING"], "name": name, "mode": os.environ["AI_AGENT_MODE"]}
    return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": json.dumps(body)}
"""

BROKEN = """
def lambda_handler(event, context):
    raise KeyError("missing thing")
"""


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    write_app(tmp_path, TEMPLATE, "cli_handlers", {"hello": HELLO, "broken": BROKEN})
    (tmp_path / "event.json").write_text(json.dumps({"pathParameters": {"name": "ana"}}))
    return tmp_path


def _env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "AWS_ENDPOINT_URL"))}
    env.pop("AI_AGENT_MODE", None)
    env["PYTHONPATH"] = f"{ROOT / 'layers/common/python'}:{ROOT}"
    env["AWS_DEFAULT_REGION"] = "ap-northeast-1"
    return env


def _runner(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "devtools.runner", *args]
    return subprocess.run(command, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=60, check=False)


def test_invoke_prints_only_the_json_result_on_stdout(app_dir: Path) -> None:
    done = _runner("-t", str(app_dir / "template.yaml"), "invoke", "HelloFunction", str(app_dir / "event.json"))

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)  # the log lines went to stderr
    assert json.loads(result["body"]) == {"greeting": "hello from ap-northeast-1", "name": "ana", "mode": "mock"}
    assert "a log line on stdout" in done.stderr
    assert "a log line on stderr" in done.stderr


def test_invoke_of_a_failing_function_prints_lambdas_error_document_and_exits_1(app_dir: Path) -> None:
    done = _runner("-t", str(app_dir / "template.yaml"), "invoke", "BrokenFunction", str(app_dir / "event.json"))

    assert done.returncode == 1
    error = json.loads(done.stdout)
    assert (error["errorType"], error["errorMessage"]) == ("KeyError", "'missing thing'")


def test_invoke_of_an_unknown_function_or_a_bad_event_file_says_what_is_wrong(app_dir: Path) -> None:
    template = str(app_dir / "template.yaml")
    (app_dir / "bad.json").write_text("{not json")

    unknown = _runner("-t", template, "invoke", "NopeFunction", str(app_dir / "event.json"))
    bad_event = _runner("-t", template, "invoke", "HelloFunction", str(app_dir / "bad.json"))

    assert unknown.returncode == 2
    assert "no function 'NopeFunction'" in unknown.stderr and "HelloFunction" in unknown.stderr
    assert bad_event.returncode != 0
    assert "is not JSON" in bad_event.stderr
    assert unknown.stdout == bad_event.stdout == ""


def test_list_shows_the_real_templates_routes_queues_and_schedules() -> None:
    done = _runner("list")

    assert done.returncode == 0, done.stderr
    assert re.search(r"POST\s+/judge\s+iam\s+-> StatusJudgeFunction", done.stdout)
    assert "NudgeQueue" in done.stdout and "DLQ NudgeDeadLetterQueue after 5 receives" in done.stdout
    assert "Hourly: cron(5 * * * ? *)" in done.stdout


def test_serve_answers_over_http_on_the_port_it_announces(app_dir: Path) -> None:
    command = [sys.executable, "-m", "devtools.runner", "-t", str(app_dir / "template.yaml"), "serve", "--port", "0"]
    server = subprocess.Popen(command, cwd=ROOT, env=_env(), stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        url = ""
        for line in server.stderr:
            found = re.search(r"http://127\.0\.0\.1:\d+", line)
            if found:
                url = found.group(0)
                break
        assert url, "the server never announced its address"
        with urllib.request.urlopen(f"{url}/hello/bo", timeout=10) as response:
            body = json.loads(response.read())
        assert body["name"] == "bo"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_fire_sends_the_scheduled_event_and_prints_the_result(app_dir: Path) -> None:
    done = _runner("-t", str(app_dir / "template.yaml"), "fire", "HelloFunction")

    assert done.returncode == 0, done.stderr
    assert json.loads(json.loads(done.stdout)["body"])["name"] == "world"


def test_event_prints_the_api_gateway_event_for_an_event_file() -> None:
    done = _runner("event", "POST", "/v1/ai-agent/sessions/s1/messages", "--user", "u-1", "--body", '{"text": "hi"}')
    missing_identity = _runner("event", "POST", "/judge", "--body", "{}")

    assert done.returncode == 0, done.stderr
    event = json.loads(done.stdout)
    assert event["requestContext"]["authorizer"]["claims"]["sub"] == "u-1"
    assert (event["pathParameters"], event["body"]) == ({"sessionId": "s1"}, '{"text": "hi"}')
    # The execute-api URL's event: the stage in the context's path, not in the path.
    assert (event["path"], event["requestContext"]["path"]) == (
        "/ai-agent/sessions/s1/messages",
        "/v1/ai-agent/sessions/s1/messages",
    )
    assert missing_identity.returncode == 2
    assert "needs an identity: pass --admin" in missing_identity.stderr


def test_event_behind_the_custom_domains_base_path_keeps_it_in_both_paths() -> None:
    done = _runner("--parameter", "ApiBasePath=/agents", "event", "GET", "/agents/ai-agent/sessions/s1", "--user", "u")

    assert done.returncode == 0, done.stderr
    event = json.loads(done.stdout)
    assert event["path"] == event["requestContext"]["path"] == "/agents/ai-agent/sessions/s1"
    assert (event["resource"], event["requestContext"]["stage"]) == ("/ai-agent/sessions/{sessionId}", "v1")
