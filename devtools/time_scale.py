"""The product's own delays and the template's times run ``scale`` times real time, as the fake
provider's ``time_scale`` runs the model's, so a test or a benchmark plays minutes of a fan-out
through the local runner in seconds. Nothing in the product imports it.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from lambda_agents.llm import Deadline, rate_bucket, rate_budget
from lambda_agents.nudges import commander
from lambda_agents.nudges import generation as _generation_module

# Patched where the generation service reads them (its own imported names), so typed loosely.
generation: Any = _generation_module

SCALE_VARIABLE = "PRODUCT_TIME_SCALE"
PRELOAD_FUNCTION = "devtools.time_scale:scale_from_environment"

_UNSCALED_COMMANDER = generation.run_commander
_UNSCALED_DEFERRAL = generation.deferral_s
_UNSCALED_FROM_LAMBDA_CONTEXT = Deadline.__dict__["from_lambda_context"]
_UNSCALED_MINUTE_S = rate_bucket.MINUTE_S


def scale_product(scale: float) -> None:
    """Every delay of the product in seconds runs ``scale`` times real time, in this process."""
    if not 0 < scale <= 1:
        raise ValueError(f"a time scale is in (0, 1], got {scale}")
    policy = replace(
        commander.COMMANDER_RETRY_POLICY,
        backoff_base_s=commander.COMMANDER_RETRY_POLICY.backoff_base_s * scale,
        max_retry_after_s=commander.COMMANDER_RETRY_POLICY.max_retry_after_s * scale,
    )
    generation.run_commander = functools.partial(commander.run_commander, retry_policy=policy)

    def deferral_s(reason: str, retry_after_s: float | None, delivery: int) -> float:
        # The server's Retry-After is in its scaled seconds: read back in the model's, then scaled.
        model_retry_after = None if retry_after_s is None else retry_after_s / scale
        return float(_UNSCALED_DEFERRAL(reason, model_retry_after, delivery)) * scale

    def from_lambda_context(context: Any, margin_s: float = 3.0) -> Deadline | None:
        return _UNSCALED_FROM_LAMBDA_CONTEXT.__func__(Deadline, context, margin_s * scale)  # type: ignore[no-any-return]

    generation.deferral_s = deferral_s
    rate_budget.MINUTE_S = rate_bucket.MINUTE_S = _UNSCALED_MINUTE_S * scale
    Deadline.from_lambda_context = staticmethod(from_lambda_context)  # type: ignore[method-assign, assignment]


def unscale_product() -> None:
    """The product's own delays again, for whatever runs next in this process."""
    generation.run_commander = _UNSCALED_COMMANDER
    generation.deferral_s = _UNSCALED_DEFERRAL
    rate_budget.MINUTE_S = rate_bucket.MINUTE_S = _UNSCALED_MINUTE_S
    Deadline.from_lambda_context = _UNSCALED_FROM_LAMBDA_CONTEXT  # type: ignore[method-assign]


def model_environment(base_url: str, scale: float, *, waits_scaled: bool = False) -> dict[str, str]:
    """A function's model settings against the fake provider running at ``scale``: the pace the
    engine plans with scaled like the provider's; ``waits_scaled``, its timeouts and breaker too (a
    benchmark run in the model's time; a test keeps real waits, so that a busy machine does not
    turn a slow token into a fallback)."""
    environment = {
        "AI_AGENT_MODE": "openai",
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "fake-key",
        "OPENAI_MODEL": "gpt-4o",
        "OPENAI_FIRST_TOKEN_SECONDS": str(1.2 * scale),
        "OPENAI_TOKENS_PER_SECOND": str(60.0 / scale),
        "POWERTOOLS_LOG_LEVEL": "ERROR",
    }
    if waits_scaled:
        waits = {"CONNECT_TIMEOUT": 5.0, "FIRST_TOKEN_TIMEOUT": 30.0, "STALL_TIMEOUT": 15.0, "BREAKER_COOLDOWN": 30.0}
        environment |= {f"OPENAI_{name}_SECONDS": str(seconds * scale) for name, seconds in waits.items()}
    return environment


def scale_from_environment() -> None:
    """The container preload: ``scale_product`` by ``PRODUCT_TIME_SCALE``."""
    scale_product(float(os.environ[SCALE_VARIABLE]))


def container_environment(scale: float) -> dict[str, str]:
    """What a function's containers need to run the product at ``scale`` (``env_overrides``)."""
    return {"RUNNER_CONTAINER_PRELOAD": PRELOAD_FUNCTION, SCALE_VARIABLE: f"{scale:g}"}


def scaled_template(template: dict[str, Any], scale: float) -> dict[str, Any]:
    """A copy of ``template`` whose queue consumers' timeouts, event sources' batching windows and
    queues' visibility timeouts run ``scale`` times real time (at least 1 s: CloudFormation's integers)."""
    scaled = copy.deepcopy(template)
    seconds: Callable[[Any], int] = lambda value: max(1, round(float(value) * scale))  # noqa: E731
    default_timeout = scaled.get("Globals", {}).get("Function", {}).get("Timeout", 3)
    for body in scaled.get("Resources", {}).values():
        props = body.get("Properties", {})
        if body.get("Type") == "AWS::Serverless::Function":
            sources = [e for e in (props.get("Events") or {}).values() if e.get("Type") == "SQS"]
            if sources:  # a queue's consumer: its time decides what it defers (others keep theirs)
                props["Timeout"] = seconds(props.get("Timeout", default_timeout))
            for source in sources:
                window = (source.get("Properties") or {}).get("MaximumBatchingWindowInSeconds")
                if window is not None:
                    source["Properties"]["MaximumBatchingWindowInSeconds"] = float(window) * scale
        elif body.get("Type") == "AWS::SQS::Queue" and isinstance(props.get("VisibilityTimeout"), int):
            props["VisibilityTimeout"] = seconds(props["VisibilityTimeout"])
    return scaled
