"""What the local runner (docs/local.md#the-local-runner-no-docker) reads from template.yaml: functions,
API routes, queues, queue subscriptions and schedules, and each function's environment with intrinsics resolved
locally, so the runner can never drift from what is deployed.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

LOCAL_ACCOUNT_ID = "123456789012"
LOCAL_STACK_NAME = "lambda-agents-local"
SAM_DEFAULT_TIMEOUT_S = 3
SAM_DEFAULT_MEMORY_MB = 128
SQS_DEFAULT_BATCH_SIZE = 10

AuthKind = Literal["cognito", "iam", "none"]


class TemplateError(ValueError):
    """The template uses something the local runner cannot resolve; the message names it."""


class _NoValue:
    def __repr__(self) -> str:
        return "AWS::NoValue"


NO_VALUE: Any = _NoValue()


@dataclass(frozen=True)
class FunctionSpec:
    logical_id: str
    code_uri: str
    handler: str
    timeout_s: int
    memory_mb: int
    layer_dirs: tuple[str, ...] = ()
    runtime: str = "python3.13"

    @property
    def module_name(self) -> str:
        """``functions/chat/`` + ``app.lambda_handler`` -> ``functions.chat.app``."""
        package = ".".join(part for part in self.code_uri.strip("/").split("/") if part)
        module = self.handler.rsplit(".", 1)[0]
        return f"{package}.{module}" if package else module

    @property
    def handler_attribute(self) -> str:
        return self.handler.rsplit(".", 1)[-1]

    @property
    def module_path(self) -> str:
        """Path of the handler's module relative to the repository root."""
        return self.module_name.replace(".", "/") + ".py"


@dataclass(frozen=True)
class RouteSpec:
    function_id: str
    event_name: str
    method: str  # upper case; "ANY" matches every method
    path: str  # as declared, with {param} / {proxy+} segments
    auth: AuthKind


@dataclass(frozen=True)
class QueueSpec:
    logical_id: str
    name: str
    attributes: dict[str, str] = field(default_factory=dict)
    dead_letter_queue_id: str | None = None
    max_receive_count: int | None = None


@dataclass(frozen=True)
class QueueSubscription:
    queue_id: str
    function_id: str
    event_name: str
    batch_size: int
    report_batch_item_failures: bool
    batching_window_s: float = 0.0
    # ScalingConfig.MaximumConcurrency as written (a number or a !Ref): the runner resolves it.
    maximum_concurrency: Any = None


@dataclass(frozen=True)
class ScheduleSpec:
    function_id: str
    event_name: str
    expression: str
    input: Any = None  # the rule's constant Input (parsed JSON), when set


def _resources(template: Mapping[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {name: body for name, body in template.get("Resources", {}).items() if body.get("Type") == resource_type}


def queue_name(logical_id: str, properties: Mapping[str, Any]) -> str:
    """Locally a queue is named after its logical ID (FIFO queues need the .fifo suffix)."""
    return f"{logical_id}.fifo" if properties.get("FifoQueue") is True else logical_id


class IntrinsicResolver:
    """Evaluates CloudFormation intrinsics against local names instead of a deployed stack."""

    def __init__(
        self,
        template: Mapping[str, Any],
        *,
        region: str,
        queue_urls: Mapping[str, str] | None = None,
        parameter_overrides: Mapping[str, str] | None = None,
    ) -> None:
        self._template = template
        self._region = region
        self._queue_urls = dict(queue_urls or {})
        self._overrides = dict(parameter_overrides or {})
        self._resources: dict[str, Any] = template.get("Resources", {})
        unknown = set(self._overrides) - set(template.get("Parameters", {}))
        if unknown:
            raise TemplateError(f"parameter overrides name unknown parameters: {sorted(unknown)}")

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            items = [self.resolve(item) for item in value]
            return [item for item in items if item is not NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            (key, argument), *_ = value.items()
            if key == "Ref":
                return self._ref(str(argument))
            if key.startswith("Fn::") or key == "Condition":
                return self._function(key, argument)
        resolved = {key: self.resolve(item) for key, item in value.items()}
        return {key: item for key, item in resolved.items() if item is not NO_VALUE}

    def condition(self, name: str) -> bool:
        conditions = self._template.get("Conditions", {})
        if name not in conditions:
            raise TemplateError(f"unknown condition {name!r}")
        return self._truth(conditions[name])

    def parameter(self, name: str) -> str:
        if name in self._overrides:
            return self._overrides[name]
        declared = self._template.get("Parameters", {}).get(name)
        if declared is None:
            raise TemplateError(f"unknown parameter {name!r}")
        if "Default" not in declared:
            raise TemplateError(f"parameter {name!r} has no Default: pass a value with --parameter {name}=VALUE")
        return _cfn_string(declared["Default"])

    # -- intrinsic functions -------------------------------------------------------------------

    def _function(self, key: str, argument: Any) -> Any:
        if key == "Fn::Sub":
            return self._sub(argument)
        if key == "Fn::GetAtt":
            parts = argument.split(".", 1) if isinstance(argument, str) else list(argument)
            if len(parts) != 2:
                raise TemplateError(f"Fn::GetAtt needs [LogicalId, Attribute], got {argument!r}")
            return self._get_att(str(parts[0]), str(parts[1]))
        if key == "Fn::If":
            name, when_true, when_false = _arguments(key, argument, 3)
            return self.resolve(when_true if self.condition(str(name)) else when_false)
        if key == "Fn::Join":
            delimiter, items = _arguments(key, argument, 2)
            return str(delimiter).join(_cfn_string(item) for item in self.resolve(items))
        if key == "Fn::Select":
            index, items = _arguments(key, argument, 2)
            return self.resolve(items)[int(self.resolve(index))]
        if key in {"Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or", "Condition"}:
            return self._truth({key: argument})
        raise TemplateError(f"the local runner cannot resolve {key}")

    def _truth(self, expression: Any) -> bool:
        if not isinstance(expression, dict) or len(expression) != 1:
            raise TemplateError(f"not a condition expression: {expression!r}")
        (key, argument), *_ = expression.items()
        if key == "Condition":
            return self.condition(str(argument))
        if key == "Fn::Equals":
            left, right = _arguments(key, argument, 2)
            return _cfn_string(self.resolve(left)) == _cfn_string(self.resolve(right))
        if key == "Fn::Not":
            (inner,) = _arguments(key, argument, 1)
            return not self._truth(inner)
        if key == "Fn::And":
            return all(self._truth(item) for item in argument)
        if key == "Fn::Or":
            return any(self._truth(item) for item in argument)
        raise TemplateError(f"{key} is not a condition function")

    def _ref(self, name: str) -> Any:
        pseudo = {
            "AWS::Region": self._region,
            "AWS::AccountId": LOCAL_ACCOUNT_ID,
            "AWS::StackName": LOCAL_STACK_NAME,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
        }
        if name == "AWS::NoValue":
            return NO_VALUE
        if name in pseudo:
            return pseudo[name]
        if name in self._template.get("Parameters", {}) or name in self._overrides:
            return self.parameter(name)
        resource = self._resources.get(name)
        if resource is None:
            raise TemplateError(f"!Ref {name}: no parameter or resource of that name")
        if resource.get("Type") == "AWS::SQS::Queue":
            if name not in self._queue_urls:
                raise TemplateError(f"!Ref {name}: the queue has no local URL (queues are created first)")
            return self._queue_urls[name]
        # Tables, functions and the rest are named after their logical ID locally.
        return name

    def _get_att(self, name: str, attribute: str) -> str:
        resource = self._resources.get(name)
        if resource is None:
            raise TemplateError(f"!GetAtt {name}.{attribute}: no resource of that name")
        kind = resource.get("Type")
        prefix = f"arn:aws:{{}}:{self._region}:{LOCAL_ACCOUNT_ID}"
        if kind == "AWS::SQS::Queue":
            local_name = queue_name(name, resource.get("Properties", {}))
            if attribute == "QueueName":
                return local_name
            if attribute == "Arn":
                return f"{prefix.format('sqs')}:{local_name}"
            if attribute == "QueueUrl":
                return str(self._ref(name))
        if kind == "AWS::DynamoDB::Table" and attribute == "Arn":
            return f"{prefix.format('dynamodb')}:table/{name}"
        if kind == "AWS::Serverless::Function" and attribute == "Arn":
            return f"{prefix.format('lambda')}:function:{name}"
        raise TemplateError(f"the local runner cannot resolve !GetAtt {name}.{attribute} ({kind})")

    def _sub(self, argument: Any) -> str:
        if isinstance(argument, list):
            text, variables = _arguments("Fn::Sub", argument, 2)
        else:
            text, variables = argument, {}
        values = {key: _cfn_string(self.resolve(value)) for key, value in dict(variables).items()}

        def replace(match: re.Match[str]) -> str:
            body = match.group(1)
            if body.startswith("!"):
                return "${" + body[1:] + "}"
            if body in values:
                return values[body]
            if "." in body:
                resource, attribute = body.split(".", 1)
                return self._get_att(resource, attribute)
            return _cfn_string(self._ref(body))

        return re.sub(r"\$\{([^}]+)\}", replace, str(text))


def _arguments(key: str, argument: Any, count: int) -> list[Any]:
    if not isinstance(argument, list) or len(argument) != count:
        raise TemplateError(f"{key} takes a list of {count} items, got {argument!r}")
    return argument


def _cfn_string(value: Any) -> str:
    """CloudFormation passes scalars as strings; YAML booleans become "true" / "false"."""
    if value is NO_VALUE:
        raise TemplateError("AWS::NoValue used where a value is required")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


# -- the template's functions, routes, queues and schedules --------------------------------------


def function_specs(template: Mapping[str, Any]) -> dict[str, FunctionSpec]:
    defaults = template.get("Globals", {}).get("Function", {})
    layers = _resources(template, "AWS::Serverless::LayerVersion")
    specs = {}
    for logical_id, body in _resources(template, "AWS::Serverless::Function").items():
        props = body.get("Properties", {})
        code_uri = props.get("CodeUri", defaults.get("CodeUri"))
        handler = props.get("Handler", defaults.get("Handler"))
        if not isinstance(code_uri, str) or not isinstance(handler, str) or "." not in handler:
            raise TemplateError(f"{logical_id}: the local runner needs a local CodeUri and a module.function Handler")
        layer_dirs = []
        for layer in props.get("Layers", defaults.get("Layers", [])):
            ref = layer.get("Ref") if isinstance(layer, dict) else None
            content = layers.get(str(ref), {}).get("Properties", {}).get("ContentUri")
            if isinstance(content, str):
                # A Python layer's code sits under python/ in its content (the Lambda layout).
                layer_dirs.append(content.rstrip("/") + "/python")
        specs[logical_id] = FunctionSpec(
            logical_id=logical_id,
            code_uri=code_uri,
            handler=handler,
            timeout_s=int(props.get("Timeout", defaults.get("Timeout", SAM_DEFAULT_TIMEOUT_S))),
            memory_mb=int(props.get("MemorySize", defaults.get("MemorySize", SAM_DEFAULT_MEMORY_MB))),
            layer_dirs=tuple(layer_dirs),
            runtime=str(props.get("Runtime", defaults.get("Runtime", "python3.13"))),
        )
    return specs


def function_environment(template: Mapping[str, Any], logical_id: str, resolver: IntrinsicResolver) -> dict[str, str]:
    """Globals.Function.Environment + the function's own, resolved; AWS::NoValue drops a variable."""
    body = _resources(template, "AWS::Serverless::Function").get(logical_id)
    if body is None:
        raise TemplateError(f"no function {logical_id!r} in the template")
    global_vars = template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})
    own_vars = body.get("Properties", {}).get("Environment", {}).get("Variables", {})
    environment = {}
    for name, raw in {**global_vars, **own_vars}.items():
        value = resolver.resolve(raw)
        if value is not NO_VALUE:
            environment[name] = _cfn_string(value)
    return environment


def _authorizer_kind(template: Mapping[str, Any], route_props: Mapping[str, Any], where: str) -> AuthKind:
    api_ref = route_props.get("RestApiId")
    api_id = api_ref.get("Ref") if isinstance(api_ref, dict) else None
    if api_id is not None:
        api_auth = _resources(template, "AWS::Serverless::Api").get(str(api_id), {}).get("Properties", {}).get("Auth")
    else:  # the implicit API takes its settings from Globals.Api
        api_auth = template.get("Globals", {}).get("Api", {}).get("Auth")
    api_auth = api_auth or {}
    name = (route_props.get("Auth") or {}).get("Authorizer", api_auth.get("DefaultAuthorizer", "NONE"))
    if name == "NONE":
        return "none"
    if name == "AWS_IAM":
        return "iam"
    declared = (api_auth.get("Authorizers") or {}).get(name)
    if declared is None:
        raise TemplateError(f"{where}: authorizer {name!r} is not declared on its API")
    if "UserPoolArn" in declared:
        return "cognito"
    raise TemplateError(f"{where}: authorizer {name!r} is neither Cognito nor AWS_IAM; the runner supports those")


def route_specs(template: Mapping[str, Any]) -> list[RouteSpec]:
    routes = []
    for logical_id, body in _resources(template, "AWS::Serverless::Function").items():
        for event_name, event in (body.get("Properties", {}).get("Events") or {}).items():
            if event.get("Type") != "Api":
                continue
            props = event.get("Properties", {})
            where = f"{logical_id}.Events.{event_name}"
            routes.append(
                RouteSpec(
                    function_id=logical_id,
                    event_name=event_name,
                    method=str(props["Method"]).upper(),
                    path=str(props["Path"]),
                    auth=_authorizer_kind(template, props, where),
                )
            )
    return routes


SAM_IMPLICIT_STAGE = "Prod"  # the stage of the API SAM makes when no AWS::Serverless::Api is declared


def api_stage_name(template: Mapping[str, Any], resolver: IntrinsicResolver) -> str:
    """The stage the routes are deployed to: the template's one API's StageName (SAM's implicit
    API's ``Prod`` when it declares none)."""
    apis = _resources(template, "AWS::Serverless::Api")
    if len(apis) > 1:
        raise TemplateError(f"the runner serves one API; the template declares {sorted(apis)}")
    for body in apis.values():
        return _cfn_string(resolver.resolve(body.get("Properties", {}).get("StageName", SAM_IMPLICIT_STAGE)))
    return SAM_IMPLICIT_STAGE


def queue_specs(template: Mapping[str, Any], resolver: IntrinsicResolver) -> dict[str, QueueSpec]:
    """Queues in creation order: dead-letter queues first, as redrive policies name their ARN."""
    declared = _resources(template, "AWS::SQS::Queue")
    specs: dict[str, QueueSpec] = {}
    for logical_id, body in declared.items():
        props = body.get("Properties", {})
        attributes: dict[str, str] = {}
        for key in ("VisibilityTimeout", "MessageRetentionPeriod", "DelaySeconds", "ReceiveMessageWaitTimeSeconds"):
            if key in props:
                attributes[key] = _cfn_string(resolver.resolve(props[key]))
        if props.get("FifoQueue") is True:
            attributes["FifoQueue"] = "true"
        dlq_id = None
        max_receive = None
        redrive = props.get("RedrivePolicy")
        if redrive:
            target = redrive.get("deadLetterTargetArn")
            getatt = target.get("Fn::GetAtt") if isinstance(target, dict) else None
            if not getatt or getatt[0] not in declared:
                raise TemplateError(f"{logical_id}: RedrivePolicy must name a template queue with !GetAtt Q.Arn")
            dlq_id = str(getatt[0])
            max_receive = int(redrive["maxReceiveCount"])
            attributes["RedrivePolicy"] = json.dumps(
                {"deadLetterTargetArn": resolver.resolve(target), "maxReceiveCount": str(max_receive)}
            )
        specs[logical_id] = QueueSpec(logical_id, queue_name(logical_id, props), attributes, dlq_id, max_receive)
    return dict(sorted(specs.items(), key=lambda item: item[1].dead_letter_queue_id is not None))


def queue_subscriptions(template: Mapping[str, Any]) -> dict[str, QueueSubscription]:
    """Queue logical ID -> its one consuming function."""
    subscriptions: dict[str, QueueSubscription] = {}
    for logical_id, body in _resources(template, "AWS::Serverless::Function").items():
        for event_name, event in (body.get("Properties", {}).get("Events") or {}).items():
            if event.get("Type") != "SQS":
                continue
            props = event.get("Properties", {})
            source = props.get("Queue")
            getatt = source.get("Fn::GetAtt") if isinstance(source, dict) else None
            if not getatt or getatt[1] != "Arn":
                raise TemplateError(f"{logical_id}.Events.{event_name}: Queue must be !GetAtt <Queue>.Arn")
            queue_id = str(getatt[0])
            if queue_id in subscriptions:
                raise TemplateError(f"queue {queue_id} has two consumers; the runner delivers to one")
            subscriptions[queue_id] = QueueSubscription(
                queue_id=queue_id,
                function_id=logical_id,
                event_name=event_name,
                batch_size=int(props.get("BatchSize", SQS_DEFAULT_BATCH_SIZE)),
                report_batch_item_failures="ReportBatchItemFailures" in (props.get("FunctionResponseTypes") or []),
                batching_window_s=float(props.get("MaximumBatchingWindowInSeconds", 0)),
                maximum_concurrency=(props.get("ScalingConfig") or {}).get("MaximumConcurrency"),
            )
    return subscriptions


def schedule_specs(template: Mapping[str, Any]) -> dict[str, list[ScheduleSpec]]:
    """Function logical ID -> its Schedule events."""
    schedules: dict[str, list[ScheduleSpec]] = {}
    for logical_id, body in _resources(template, "AWS::Serverless::Function").items():
        for event_name, event in (body.get("Properties", {}).get("Events") or {}).items():
            if event.get("Type") not in {"Schedule", "ScheduleV2"}:
                continue
            props = event.get("Properties", {})
            raw_input = props.get("Input")
            spec = ScheduleSpec(
                function_id=logical_id,
                event_name=event_name,
                expression=str(props.get("Schedule") or props.get("ScheduleExpression")),
                input=json.loads(raw_input) if isinstance(raw_input, str) else None,
            )
            schedules.setdefault(logical_id, []).append(spec)
    return schedules
