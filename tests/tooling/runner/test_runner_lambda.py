"""Invoking a handler in-process like Lambda: env, context, errors, timeouts, JSON."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from devtools.runner_lambda import (
    FunctionFailed,
    FunctionUnavailable,
    Handler,
    InProcessLambda,
    import_handler_from,
    lambda_context,
)
from devtools.runner_template import FunctionSpec

SPEC = FunctionSpec("EchoFunction", "functions/echo/", "app.lambda_handler", timeout_s=5, memory_mb=256)


def _lambda(handler: Handler) -> InProcessLambda:
    return InProcessLambda(lambda spec: handler, region="us-east-1")


def test_the_handler_sees_its_environment_which_is_restored_afterwards() -> None:
    seen: dict[str, Any] = {}

    def handler(event: Any, context: Any) -> Any:
        seen["table"] = os.environ.get("RUNNER_TEST_TABLE")
        return {"ok": True}

    assert _lambda(handler).invoke(SPEC, {}, {"RUNNER_TEST_TABLE": "ItemsTable"}) == {"ok": True}
    assert seen["table"] == "ItemsTable"
    assert "RUNNER_TEST_TABLE" not in os.environ


def test_the_event_is_a_copy_and_the_context_counts_down_from_the_timeout() -> None:
    event = {"items": [1]}

    def handler(received: Any, context: Any) -> Any:
        received["items"].append(2)
        return {
            "remaining": context.get_remaining_time_in_millis(),
            "name": context.function_name,
            "memory": context.memory_limit_in_mb,
            "arn": context.invoked_function_arn,
        }

    result = _lambda(handler).invoke(SPEC, event, {})

    assert event == {"items": [1]}
    assert 4_000 < result["remaining"] <= 5_000
    # The memory is text, as Lambda's runtime gives it (awslambdaric reads it from the environment).
    assert (result["name"], result["memory"]) == ("EchoFunction", "256")
    assert result["arn"] == "arn:aws:lambda:us-east-1:123456789012:function:EchoFunction"


def test_remaining_time_reaches_zero_and_stays_there() -> None:
    context = lambda_context(FunctionSpec("F", "f/", "app.h", timeout_s=0, memory_mb=128), "us-east-1")
    assert context.get_remaining_time_in_millis() == 0


def test_a_handler_exception_becomes_lambdas_error_document() -> None:
    def handler(event: Any, context: Any) -> Any:
        raise ValueError("bad input")

    with pytest.raises(FunctionFailed) as failure:
        _lambda(handler).invoke(SPEC, {}, {})

    payload = failure.value.payload()
    assert (payload["errorType"], payload["errorMessage"]) == ("ValueError", "bad input")
    # As Lambda's runtime gives it (sam local invoke shows it): the request's id, and the handler's
    # own frames only, without the runner's frame, a "Traceback" header or the exception line.
    assert list(payload) == ["errorMessage", "errorType", "requestId", "stackTrace"]
    assert re.fullmatch(r"[0-9a-f-]{36}", payload["requestId"])
    (frame,) = payload["stackTrace"]
    assert frame.startswith('  File "') and ", in handler\n" in frame and 'raise ValueError("bad input")' in frame


def test_an_invocation_that_overran_its_timeout_fails_as_timed_out() -> None:
    spec = FunctionSpec("Slow", "f/", "app.h", timeout_s=0, memory_mb=128)

    def handler(event: Any, context: Any) -> Any:
        time.sleep(0.01)
        return {}

    with pytest.raises(FunctionFailed, match=re.escape("Task timed out after 0.00 seconds")):
        _lambda(handler).invoke(spec, {}, {})


def test_a_result_that_is_not_json_fails_like_lambdas_marshal_error() -> None:
    with pytest.raises(FunctionFailed, match=re.escape("Runtime.MarshalError")):
        _lambda(lambda event, context: {"when": object()}).invoke(SPEC, {}, {})


def test_the_handler_module_is_imported_once_per_function_with_its_env_in_place(tmp_path: Path) -> None:
    package = tmp_path / "runner_fake_pkg" / "echo"
    package.mkdir(parents=True)
    (tmp_path / "runner_fake_pkg" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "app.py").write_text(
        "import os\nAT_IMPORT = os.environ['RUNNER_IMPORT_VAR']\nCOUNT = []\n"
        "def lambda_handler(event, context):\n    COUNT.append(1)\n    return [AT_IMPORT, len(COUNT)]\n"
    )
    spec = FunctionSpec("Echo", "runner_fake_pkg/echo/", "app.lambda_handler", 3, 128)
    runtime = InProcessLambda(import_handler_from(tmp_path), "us-east-1")

    assert runtime.invoke(spec, {}, {"RUNNER_IMPORT_VAR": "cold"}) == ["cold", 1]
    assert runtime.invoke(spec, {}, {"RUNNER_IMPORT_VAR": "warm"}) == ["cold", 2]


def test_a_missing_module_or_one_that_fails_to_import_is_unavailable_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "runner_broken_pkg").mkdir()
    (tmp_path / "runner_broken_pkg" / "__init__.py").write_text("")
    (tmp_path / "runner_broken_pkg" / "app.py").write_text("raise ImportError('half written')\n")
    loader = import_handler_from(tmp_path)

    with pytest.raises(FunctionUnavailable, match=re.escape("runner_missing/app.py does not exist yet")):
        loader(FunctionSpec("Missing", "runner_missing/", "app.lambda_handler", 3, 128))
    with pytest.raises(
        FunctionUnavailable, match=re.escape("importing runner_broken_pkg.app failed: ImportError: half written")
    ):
        loader(FunctionSpec("Broken", "runner_broken_pkg/", "app.lambda_handler", 3, 128))


def test_a_runners_first_load_of_a_function_is_a_cold_start_for_its_module_caches() -> None:
    import functools
    import types

    from devtools.runner_lambda import fresh_container

    module = types.ModuleType("functions.cached_example")
    calls: list[int] = []

    def build() -> int:
        calls.append(1)
        return len(calls)

    build.__module__ = module.__name__
    cached = functools.cache(build)
    module.settings = cached  # type: ignore[attr-defined]
    assert cached() == 1 and cached() == 1

    fresh_container(module)

    assert cached() == 2  # built again from the new environment


def test_a_cold_start_reads_parameters_again_instead_of_another_functions_cached_values() -> None:
    import types

    from aws_lambda_powertools.utilities.parameters import base

    from devtools.runner_lambda import fresh_container

    base.DEFAULT_PROVIDERS["ssm"] = object()  # the provider, its client and its values, of a function run before

    fresh_container(types.ModuleType("functions.cached_example"))

    assert "ssm" not in base.DEFAULT_PROVIDERS


def test_containers_that_end_take_the_clients_their_functions_cached_with_them() -> None:
    """The layer's SQS client, built in an invocation on this runner's endpoint, is dropped when the
    containers end: a later user of the module (another test's moto, another runner) builds its own
    instead of calling a local server that is gone."""
    from lambda_agents.storage.queues import sqs_client

    def handler(event: Any, context: Any) -> Any:
        return {"endpoint": sqs_client().meta.endpoint_url}

    handler.__module__ = "lambda_agents.storage.queues"  # a function of the shared layer's module
    sqs_client.cache_clear()
    invoker = _lambda(handler)
    local = {"AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:9", "AWS_DEFAULT_REGION": "us-east-1"}

    assert invoker.invoke(SPEC, {}, local) == {"endpoint": "http://127.0.0.1:9"}
    assert sqs_client.cache_info().currsize == 1  # kept between the container's invocations

    invoker.close()

    assert sqs_client.cache_info().currsize == 0
