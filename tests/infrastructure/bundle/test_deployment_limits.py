"""What a deployment gets, read on the SAM-transformed template: one API stage and it is throttled,
tighter limits on the routes that call the model, bounded concurrency, time budgets that fit API
Gateway's 29 s, admin-created users unless sign-up is opened, the tracing switch, names that let
two stacks share an account, and the outputs a caller needs."""

from __future__ import annotations

import re
import tomllib
from typing import Any

import pytest
from lambda_agents.api.time_budget import ANSWER_MARGIN_S, API_GATEWAY_TIMEOUT_S
from lambda_agents.nudges.settings import SlotTableSettings
from lambda_agents.nudges.tokens import MAX_SLOTS, estimate_max_tokens, most_slots_within
from pydantic import ValidationError

from devtools.template import ROOT, load_template, resources_of_type
from tests.support.sam_template import resources, transformed

MODEL_ROUTES = [
    ("POST", "/ai-agent/sessions/{sessionId}/messages"),
    ("POST", "/interviews/{sessionId}/messages"),
    ("POST", "/interviews/{sessionId}/fields/{fieldId}/correction"),  # a turn of the agents, like a message
    ("POST", "/judge"),
]
MODEL_API_FUNCTIONS = {"ChatFunction", "InterviewFunction", "StatusJudgeFunction"}
OTEL_LAYER = "arn:aws:lambda:us-east-1:615299751070:layer:AWSOpenTelemetryDistroPython:16"


def default_of(parameter: str) -> Any:
    return load_template()["Parameters"][parameter]["Default"]


def stage() -> dict[str, Any]:
    (only,) = resources(transformed(), "AWS::ApiGateway::Stage").values()
    return dict(only["Properties"])


def method_setting(resource_path: str, method: str) -> dict[str, Any]:
    (found,) = [s for s in stage()["MethodSettings"] if (s["ResourcePath"], s["HttpMethod"]) == (resource_path, method)]
    return dict(found)


def api_functions() -> set[str]:
    return {
        name
        for name, body in resources_of_type("AWS::Serverless::Function").items()
        if any(event["Type"] == "Api" for event in (body["Properties"].get("Events") or {}).values())
    }


# -- stages and throttling -------------------------------------------------------------------------


def test_the_api_has_exactly_one_stage_v1_and_no_implicit_stage_named_stage() -> None:
    stages = resources(transformed(), "AWS::ApiGateway::Stage")
    assert [body["Properties"]["StageName"] for body in stages.values()] == ["v1"]


def test_every_stage_throttles_every_route() -> None:
    for body in resources(transformed(), "AWS::ApiGateway::Stage").values():
        settings = {(s["ResourcePath"], s["HttpMethod"]): s for s in body["Properties"]["MethodSettings"]}
        assert settings[("/*", "*")]["ThrottlingRateLimit"] == {"Ref": "ApiRateLimit"}
        assert settings[("/*", "*")]["ThrottlingBurstLimit"] == {"Ref": "ApiBurstLimit"}
    assert (default_of("ApiRateLimit"), default_of("ApiBurstLimit")) == (20, 50)


@pytest.mark.parametrize(("method", "path"), MODEL_ROUTES)
def test_every_route_that_calls_the_model_has_its_own_tighter_throttle(method: str, path: str) -> None:
    (api,) = resources(transformed(), "AWS::ApiGateway::RestApi").values()
    assert method.lower() in api["Properties"]["Body"]["paths"][path]  # the route exists as declared
    setting = method_setting("/" + path.replace("/", "~1"), method)  # API Gateway writes "/" as "~1"
    assert (setting["ThrottlingRateLimit"], setting["ThrottlingBurstLimit"]) == (
        {"Ref": "ModelRouteRateLimit"},
        {"Ref": "ModelRouteBurstLimit"},
    )
    assert default_of("ModelRouteRateLimit") < default_of("ApiRateLimit")


def test_the_model_routes_are_exactly_the_post_routes_of_the_functions_that_call_the_model_with_a_body() -> None:
    routes = {
        (str(event["Properties"]["Method"]).upper(), event["Properties"]["Path"])
        for name in MODEL_API_FUNCTIONS
        for event in resources_of_type("AWS::Serverless::Function")[name]["Properties"]["Events"].values()
        if event["Type"] == "Api"
    }
    # the other routes of these functions create, read, list, consent, skip or delete: no model call
    assert set(MODEL_ROUTES) <= routes
    assert routes - set(MODEL_ROUTES) == {
        ("POST", "/ai-agent/sessions"),
        ("GET", "/ai-agent/sessions"),
        ("GET", "/ai-agent/sessions/{sessionId}"),
        ("DELETE", "/ai-agent/sessions/{sessionId}"),
        ("GET", "/ai-agent/sessions/{sessionId}/messages/{seq}"),  # an answer already written, or 202
        ("POST", "/interviews"),
        ("POST", "/interviews/{sessionId}/consent"),
        ("POST", "/interviews/{sessionId}/fields/{fieldId}/skip"),
        ("GET", "/interviews/{sessionId}"),
        ("GET", "/interviews/{sessionId}/turns/{turnId}"),  # a turn's reply already committed, or 202
        ("DELETE", "/interviews/{sessionId}"),
        ("GET", "/jobs"),
        ("GET", "/interviews"),
    }


# -- concurrency ---------------------------------------------------------------------------------


def test_the_nudge_fan_out_runs_at_most_the_configured_number_of_batches_at_once() -> None:
    mappings = resources(transformed(), "AWS::Lambda::EventSourceMapping").values()
    (mapping,) = [m for m in mappings if m["Properties"]["FunctionName"] == {"Ref": "NudgeGeneratorFunction"}]
    assert mapping["Properties"]["ScalingConfig"] == {"MaximumConcurrency": {"Ref": "NudgeGeneratorConcurrency"}}
    assert 2 <= default_of("NudgeGeneratorConcurrency") <= 10


def test_each_generator_container_paces_to_its_share_of_the_accounts_rate_limit() -> None:
    """The account's limits and the fan-out's part of them reach every generator container, which
    splits that part with the others the event source may run at once."""
    variables = resources(transformed(), "AWS::Lambda::Function")["NudgeGeneratorFunction"]["Properties"][
        "Environment"
    ]["Variables"]
    assert variables["OPENAI_REQUESTS_PER_MINUTE"] == {"Ref": "ProviderRequestsPerMinute"}
    assert variables["OPENAI_TOKENS_PER_MINUTE"] == {"Ref": "ProviderTokensPerMinute"}
    assert variables["OPENAI_RATE_LIMIT_SHARE"] == {"Ref": "NudgeRateLimitShare"}
    assert variables["OPENAI_RATE_LIMIT_CONTAINERS"] == {"Ref": "NudgeGeneratorConcurrency"}
    # Not known by default: nothing is paced until the account's limits are given.
    assert default_of("ProviderRequestsPerMinute") == 0 and default_of("ProviderTokensPerMinute") == 0


@pytest.mark.parametrize(
    ("share", "accepted"),
    [
        ("0.8", True),
        ("1", True),
        ("1.0", True),
        (".5", True),
        ("0.05", True),
        ("0", False),
        ("0.0", False),
        ("1.5", False),
        ("80", False),
        ("", False),
    ],
)
def test_the_fan_outs_share_of_the_limit_is_a_fraction_of_the_account(share: str, accepted: bool) -> None:
    pattern = load_template()["Parameters"]["NudgeRateLimitShare"]["AllowedPattern"]
    assert (re.fullmatch(pattern, share) is not None) is accepted


def test_the_default_reserves_nothing_so_a_new_account_can_deploy_and_prod_reserves_for_the_model_functions() -> None:
    assert default_of("ModelFunctionConcurrency") == 0  # a new account's quota is 10: reserving 3 x 10 fails
    unreserved = resources(transformed(), "AWS::Lambda::Function")
    assert not any("ReservedConcurrentExecutions" in body["Properties"] for body in unreserved.values())
    functions = resources(transformed({"ModelFunctionConcurrency": "10"}), "AWS::Lambda::Function")
    reserved = {name for name, body in functions.items() if "ReservedConcurrentExecutions" in body["Properties"]}
    assert reserved == MODEL_API_FUNCTIONS
    for name in reserved:
        assert functions[name]["Properties"]["ReservedConcurrentExecutions"] == {"Ref": "ModelFunctionConcurrency"}
    prod = tomllib.loads((ROOT / "samconfig.toml").read_text(encoding="utf-8"))["prod"]["deploy"]["parameters"]
    assert "ModelFunctionConcurrency=10" in prod["parameter_overrides"].split()


# -- time budgets --------------------------------------------------------------------------------


def test_no_api_function_works_past_api_gateways_29_s_except_the_judge_whose_handler_counts_the_request() -> None:
    functions = resources(transformed(), "AWS::Lambda::Function")
    for name in api_functions() - {"StatusJudgeFunction"}:
        assert functions[name]["Properties"]["Timeout"] <= API_GATEWAY_TIMEOUT_S, name
    # A Step Functions task may give the judge longer; over HTTP it takes the request's deadline.
    assert functions["StatusJudgeFunction"]["Properties"]["Timeout"] == 60


def test_a_chat_answer_that_does_not_fit_in_29_s_goes_to_a_worker_with_time_for_the_slowest_answer() -> None:
    """The message route answers in the request only what fits at the model's pace; the rest is
    ChatAnswerFunction's, whose timeout holds a reasoning model's 30 s first token, the whole
    answer at a slow hour's 20 tokens/s, the chat policy's one retry after its backoff, and the margin."""
    functions = resources_of_type("AWS::Serverless::Function")
    chat = functions["ChatFunction"]["Properties"]["Environment"]["Variables"]
    assert chat["CHAT_ANSWERS_QUEUE_URL"] == {"Ref": "ChatAnswersQueue"}
    worker = functions["ChatAnswerFunction"]["Properties"]
    variables = worker["Environment"]["Variables"]
    answer_s = 30 + int(variables["OPENAI_MAX_TOKENS"]) / 20
    backoff_s = float(variables["CHAT_RETRY_BACKOFF_SECONDS"])
    assert answer_s + backoff_s + ANSWER_MARGIN_S <= worker["Timeout"]
    assert variables["OPENAI_MAX_TOKENS"] == chat["OPENAI_MAX_TOKENS"]


def test_the_most_nudges_a_day_may_hold_are_what_a_slow_hours_plan_can_make_within_the_generators_timeout() -> None:
    """A plan's first attempt for NudgeMaxSlots slots (nudges/tokens.py) at a slow hour's 20
    tokens/s, after a reasoning model's 30 s first token, ends within NudgeGeneratorFunction's
    timeout; one slot more would not. A day the model cannot make in one invocation would end, after
    every delivery ran out of time, in the rule-based fallback."""
    timeout = resources(transformed(), "AWS::Lambda::Function")["NudgeGeneratorFunction"]["Properties"]["Timeout"]
    most = load_template()["Parameters"]["NudgeMaxSlots"]["MaxValue"]
    assert 30 + estimate_max_tokens(most) / 20 <= timeout < 30 + estimate_max_tokens(most + 1) / 20
    assert most == MAX_SLOTS == most_slots_within(timeout)
    assert default_of("NudgeMaxSlots") <= most
    with pytest.raises(ValidationError):
        SlotTableSettings.model_validate({"NUDGE_MAX_SLOTS": str(most + 1)})


def test_the_background_functions_keep_their_longer_timeouts() -> None:
    functions = resources(transformed(), "AWS::Lambda::Function")
    assert functions["NudgeSchedulerFunction"]["Properties"]["Timeout"] == 300
    # A batch's users run at once: the slowest plan the product serves (4,095 tokens at a slow
    # hour's 20 tokens/s, ~205 s) fits in one invocation.
    assert functions["NudgeGeneratorFunction"]["Properties"]["Timeout"] >= 4095 / 20 + 30


def test_every_queue_a_function_consumes_stays_invisible_six_times_the_functions_timeout() -> None:
    """AWS's advice for an SQS event source: a retried invocation must not find its message visible."""
    template = transformed()
    functions = resources(template, "AWS::Lambda::Function")
    mappings = resources(template, "AWS::Lambda::EventSourceMapping").values()
    assert mappings
    for mapping in mappings:
        properties = mapping["Properties"]
        queue_id = properties["EventSourceArn"]["Fn::GetAtt"][0]
        function_id = properties["FunctionName"]["Ref"]
        visibility = template["Resources"][queue_id]["Properties"]["VisibilityTimeout"]
        assert visibility >= 6 * functions[function_id]["Properties"]["Timeout"], (queue_id, function_id)


# A new account's concurrency quota (Lambda's default before an increase): every function shares it.
NEW_ACCOUNT_CONCURRENCY = 10


def test_every_queue_a_function_consumes_is_delivered_at_least_five_times_as_aws_advises_under_throttling() -> None:
    """A throttled invocation's messages count a delivery without the consumer ever running, so the
    last-delivery fallback (a plan, chat's fallback D, an interview turn's failure) can be skipped and
    the turn never end; AWS's advice wherever throttling is possible is a maxReceiveCount of 5 or more."""
    template = transformed()
    mappings = resources(template, "AWS::Lambda::EventSourceMapping").values()
    for mapping in mappings:
        queue_id = mapping["Properties"]["EventSourceArn"]["Fn::GetAtt"][0]
        redrive = template["Resources"][queue_id]["Properties"]["RedrivePolicy"]
        assert int(redrive["maxReceiveCount"]) >= 5, queue_id


def test_the_queue_consumers_default_concurrency_fits_a_new_account_and_prod_runs_more() -> None:
    """On a new account (a quota of 10) the three consumers' own event sources cannot together ask
    for more than the account runs; prod, on a raised quota, keeps 10 chat answers and 10 turns."""
    template = transformed()
    caps = [
        mapping["Properties"]["ScalingConfig"]["MaximumConcurrency"]["Ref"]
        for mapping in resources(template, "AWS::Lambda::EventSourceMapping").values()
    ]
    assert sorted(caps) == ["ChatAnswerConcurrency", "InterviewTurnConcurrency", "NudgeGeneratorConcurrency"]
    assert sum(default_of(cap) for cap in caps) <= NEW_ACCOUNT_CONCURRENCY
    prod = tomllib.loads((ROOT / "samconfig.toml").read_text(encoding="utf-8"))["prod"]["deploy"]["parameters"]
    overrides = prod["parameter_overrides"].split()
    assert {"ChatAnswerConcurrency=10", "InterviewTurnConcurrency=10"} <= set(overrides)


@pytest.mark.parametrize(
    ("function", "queue", "module"),
    [
        ("ChatAnswerFunction", "ChatAnswersQueue", "functions.chat_answers.app"),
        ("InterviewTurnFunction", "InterviewTurnsQueue", "functions.interview_turns.app"),
        ("NudgeGeneratorFunction", "NudgeQueue", "functions.nudge_generator.app"),
    ],
)
def test_each_worker_knows_its_queues_last_delivery_and_its_own_default_is_the_same(
    function: str, queue: str, module: str
) -> None:
    import importlib

    resources_ = transformed()["Resources"]
    redrive = resources_[queue]["Properties"]["RedrivePolicy"]
    settings = [
        model
        for model in vars(importlib.import_module(module)).values()
        if isinstance(model, type) and "max_receive_count" in getattr(model, "model_fields", {})
    ]
    (found,) = settings
    field = found.model_fields["max_receive_count"]
    variables = resources_[function]["Properties"]["Environment"]["Variables"]
    assert int(variables[str(field.alias)]) == int(redrive["maxReceiveCount"]) == field.default


def test_the_generator_knows_its_queues_last_delivery() -> None:
    """On it, a deferred user gets the rule-based fallback instead of the dead-letter queue."""
    resources_ = transformed()["Resources"]
    variables = resources_["NudgeGeneratorFunction"]["Properties"]["Environment"]["Variables"]
    redrive = resources_["NudgeQueue"]["Properties"]["RedrivePolicy"]
    assert int(variables["NUDGE_MAX_RECEIVE_COUNT"]) == int(redrive["maxReceiveCount"])
    assert variables["NUDGE_QUEUE_URL"] == {"Ref": "NudgeQueue"}


# -- sign-up -------------------------------------------------------------------------------------


def test_by_default_only_an_administrator_creates_users() -> None:
    pool = transformed()["Resources"]["UserPool"]["Properties"]
    assert pool["AdminCreateUserConfig"] == {"AllowAdminCreateUserOnly": True}


def test_a_parameter_opens_self_sign_up() -> None:
    pool = transformed({"SelfSignUp": "enabled"})["Resources"]["UserPool"]["Properties"]
    assert pool["AdminCreateUserConfig"] == {"AllowAdminCreateUserOnly": False}


def test_the_pool_states_its_password_policy_and_offers_an_authenticator_app_as_second_factor() -> None:
    pool = transformed()["Resources"]["UserPool"]["Properties"]
    policy = pool["Policies"]["PasswordPolicy"]
    assert policy["MinimumLength"] >= 12
    assert all(
        policy[kind] is True for kind in ("RequireLowercase", "RequireUppercase", "RequireNumbers", "RequireSymbols")
    )
    assert pool["MfaConfiguration"] == "OPTIONAL" and pool["EnabledMfas"] == ["SOFTWARE_TOKEN_MFA"]
    assert pool["AccountRecoverySetting"] == {"RecoveryMechanisms": [{"Name": "verified_email", "Priority": 1}]}


# -- tracing -------------------------------------------------------------------------------------


def test_tracing_is_off_by_default_nothing_of_opentelemetry_loads_and_no_trace_is_sampled() -> None:
    template = transformed()
    for name, body in resources(template, "AWS::Lambda::Function").items():
        properties = body["Properties"]
        assert "TracingConfig" not in properties, name  # Lambda's own default: pass an upstream trace on
        assert len(properties["Layers"]) == 1, name
        variables = properties["Environment"]["Variables"]
        assert variables["OTEL_SDK_DISABLED"] == "true", name
        assert "AWS_LAMBDA_EXEC_WRAPPER" not in variables, name
    assert stage()["TracingEnabled"] is False


def test_an_adot_layer_arn_switches_opentelemetry_tracing_on_for_every_function_and_the_stage() -> None:
    template = transformed({"OtelLayerArn": OTEL_LAYER, "TracingMode": "Active"})
    for name, body in resources(template, "AWS::Lambda::Function").items():
        properties = body["Properties"]
        assert properties["TracingConfig"] == {"Mode": {"Ref": "TracingMode"}}, name
        assert properties["Layers"][-1] == {"Ref": "OtelLayerArn"}, name
        variables = properties["Environment"]["Variables"]
        assert variables["AWS_LAMBDA_EXEC_WRAPPER"] == "/opt/otel-instrument", name
        assert "OTEL_SDK_DISABLED" not in variables, name
    (tracing_stage,) = resources(template, "AWS::ApiGateway::Stage").values()
    assert tracing_stage["Properties"]["TracingEnabled"] is True


@pytest.mark.parametrize("parameters", [{}, {"OtelLayerArn": OTEL_LAYER, "TracingMode": "Active"}])
def test_no_instrumentation_may_record_prompts_or_answers_and_a_flush_cannot_hold_an_answer_long(
    parameters: dict[str, str],
) -> None:
    for body in resources(transformed(parameters), "AWS::Lambda::Function").values():
        variables = body["Properties"]["Environment"]["Variables"]
        assert variables["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] == "false"
        assert int(variables["OTEL_INSTRUMENTATION_AWS_LAMBDA_FLUSH_TIMEOUT"]) <= 1000


# -- names and outputs ---------------------------------------------------------------------------


def test_the_layer_is_named_after_the_stack_so_two_stacks_in_one_account_do_not_share_it() -> None:
    (layer,) = resources(transformed(), "AWS::Lambda::LayerVersion").values()
    assert layer["Properties"]["LayerName"] == {"Fn::Sub": "${AWS::StackName}-common"}


def test_the_api_url_is_partition_aware() -> None:
    url = transformed()["Outputs"]["ApiUrl"]["Value"]["Fn::Sub"]
    assert "${AWS::URLSuffix}" in url and "amazonaws.com" not in url


def test_an_output_names_the_judges_arn_for_step_functions() -> None:
    output = transformed()["Outputs"]["StatusJudgeFunctionArn"]
    assert output["Value"] == {"Fn::GetAtt": ["StatusJudgeFunction", "Arn"]}
    assert output["Export"]["Name"] == {"Fn::Sub": "${AWS::StackName}-StatusJudgeFunctionArn"}
