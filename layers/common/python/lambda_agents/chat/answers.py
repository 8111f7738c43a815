"""The fixed Japanese texts the chat answers with when the model gave no usable answer, and the
chat's error codes (docs/chat-and-templates.md#the-fallback-answer).

- The fallback answer: the provider failed (timeout, 429, 5xx, network) after the one retry, or the
  invocation's time ran out: no JSON, the tokens the failed attempts were billed for.
- A refusal or a content-filtered answer: not a provider failure, so not the fallback answer; the client
  gets a fixed text saying the request cannot be answered (the filtered text itself is dropped),
  the billed tokens are reported.
- An empty answer (no text, no refusal): the fallback text, with the billed tokens.
"""

from __future__ import annotations

from enum import StrEnum

FALLBACK_CONTENT = (
    "申し訳ありません。ただいまAIアシスタントが応答できない状態です。"
    "少し時間をおいてから、もう一度お試しください。いただいたメッセージは保存されています。"
)
REFUSAL_CONTENT = (
    "申し訳ありませんが、このご依頼にはお答えできません。"
    "業務プロセスやテンプレートづくりについてのご相談であれば、内容を変えてもう一度お送りください。"
)
FILTERED_CONTENT = (
    "申し訳ありませんが、安全上の理由からこの内容には回答できません。表現を変えてもう一度お試しください。"
)


class AIConversationErrorCode(StrEnum):
    """The chat's error codes (docs/chat-and-templates.md#the-model-call-policy)."""

    OPENAI_UNAVAILABLE = "OpenAIUnavailable"
    RATE_LIMITED = "RateLimited"
    TIMEOUT = "Timeout"
    INVALID_STRUCTURED_JSON = "InvalidStructuredJson"


def error_code_for(kind: str) -> AIConversationErrorCode:
    """The chat's code for an engine failure kind (``ProviderFailed.kind`` / ``deadline``)."""
    if kind == "rate_limit":
        return AIConversationErrorCode.RATE_LIMITED
    if kind in ("timeout", "deadline"):
        return AIConversationErrorCode.TIMEOUT
    return AIConversationErrorCode.OPENAI_UNAVAILABLE
