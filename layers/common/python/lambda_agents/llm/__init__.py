"""The structured-output engine and the model port.

Import ``OpenAIChatModel`` from ``lambda_agents.llm.openai_model`` only where a model is built
(``factory.build_chat_model`` does it lazily): importing openai costs ~1 s of cold start.
"""

from .budgets import CONTAINER_BUDGETS, LearnedBudgets
from .calls import CallResult, complete_with_retries
from .engine import Attempt, Strategy, StructuredResult, generate_structured
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
from .types import ChatModel, ChatRequest, ChatResponse, Message, ToolCall, Usage, estimate_tokens

__all__ = [
    "CONTAINER_BUDGETS",
    "Attempt",
    "CallResult",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "ContentFiltered",
    "Deadline",
    "DeadlineReached",
    "FixedTokenPolicy",
    "GrowingTokenPolicy",
    "LearnedBudgets",
    "Message",
    "ModelRefused",
    "OutputInvalid",
    "OutputTruncated",
    "ProviderError",
    "ProviderFailed",
    "RetryPolicy",
    "SchemaNotSupported",
    "Strategy",
    "StructuredOutputError",
    "StructuredResult",
    "TokenPolicy",
    "ToolCall",
    "Usage",
    "complete_with_retries",
    "estimate_tokens",
    "generate_structured",
]
