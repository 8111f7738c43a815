"""The structured-output engine and the model port.

Import ``OpenAIChatModel`` from ``lambda_agents.llm.openai_model`` only where a model is built
(``factory.build_chat_model`` does it lazily): importing openai costs ~1 s of cold start.

The names below load on first use (PEP 562): every API function's error mapping needs only
``llm.errors``, and a function that calls no model should not load the engine at cold start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .budgets import CONTAINER_BUDGETS, LearnedBudgets
    from .calls import CallResult, complete_with_retries
    from .engine import Strategy, StructuredOptions, StructuredResult, generate_structured
    from .errors import (
        ContentFiltered,
        DeadlineReached,
        ModelRefused,
        OutputInvalid,
        OutputTruncated,
        ProviderError,
        ProviderFailed,
        SchemaNotSupported,
        StructuredOutputError,
    )
    from .policy import Deadline, FixedTokenPolicy, GrowingTokenPolicy, RetryPolicy, TokenPolicy
    from .retry_loop import CallOptions
    from .types import (
        AnswerHints,
        AnswerListener,
        Attempt,
        ChatModel,
        ChatRequest,
        ChatResponse,
        JsonOutput,
        Message,
        Pacing,
        RequestParameters,
        ToolCall,
        ToolDefinition,
        Usage,
        estimate_tokens,
    )

__all__ = [
    "CONTAINER_BUDGETS",
    "AnswerHints",
    "AnswerListener",
    "Attempt",
    "CallOptions",
    "CallResult",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "ContentFiltered",
    "Deadline",
    "DeadlineReached",
    "FixedTokenPolicy",
    "GrowingTokenPolicy",
    "JsonOutput",
    "LearnedBudgets",
    "Message",
    "ModelRefused",
    "OutputInvalid",
    "OutputTruncated",
    "Pacing",
    "ProviderError",
    "ProviderFailed",
    "RequestParameters",
    "RetryPolicy",
    "SchemaNotSupported",
    "Strategy",
    "StructuredOptions",
    "StructuredOutputError",
    "StructuredResult",
    "TokenPolicy",
    "ToolCall",
    "ToolDefinition",
    "Usage",
    "complete_with_retries",
    "estimate_tokens",
    "generate_structured",
]
# Where each name above lives; a unit test keeps the two lists equal.
_SUBMODULE_OF = {
    "CONTAINER_BUDGETS": "budgets",
    "LearnedBudgets": "budgets",
    "CallOptions": "retry_loop",
    "CallResult": "calls",
    "complete_with_retries": "calls",
    "Attempt": "types",
    "Strategy": "engine",
    "StructuredOptions": "engine",
    "StructuredResult": "engine",
    "generate_structured": "engine",
    "ContentFiltered": "errors",
    "DeadlineReached": "errors",
    "ModelRefused": "errors",
    "OutputInvalid": "errors",
    "OutputTruncated": "errors",
    "ProviderError": "errors",
    "ProviderFailed": "errors",
    "SchemaNotSupported": "errors",
    "StructuredOutputError": "errors",
    "Deadline": "policy",
    "FixedTokenPolicy": "policy",
    "GrowingTokenPolicy": "policy",
    "RetryPolicy": "policy",
    "TokenPolicy": "policy",
    "AnswerHints": "types",
    "AnswerListener": "types",
    "Pacing": "types",
    "RequestParameters": "types",
    "ChatModel": "types",
    "ChatRequest": "types",
    "ChatResponse": "types",
    "JsonOutput": "types",
    "ToolDefinition": "types",
    "Message": "types",
    "ToolCall": "types",
    "Usage": "types",
    "estimate_tokens": "types",
}


def __getattr__(name: str) -> object:
    submodule = _SUBMODULE_OF.get(name)
    if submodule is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{submodule}"), name)
    globals()[name] = value  # later lookups do not come back here
    return value
