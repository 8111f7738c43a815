"""HistoryAssembler: the recent conversation sent with each message
(docs/chat-and-templates.md#the-history-window-and-token-budget).

- Only user and assistant messages, and only what was said: the fixed texts of a fallback, a
  refusal or a filtered answer are left out (``StoredMessage.in_history``).
- The window: at most ``window_size`` (12) of those messages, the newest.
- The budget: ``modelContextLimit - (responseMaxTokens + safetyMarginTokens) - systemTokens``,
  less the new user message itself, with tokens estimated as ceil(UTF-8 bytes / 4). Messages are
  taken newest first while they fit; the first one that does not fit ends the history, so what
  is sent is always a contiguous tail of the conversation.
- The latest user/assistant pair (an assistant message and the user message right before it) is
  always included, even over the budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict

from ..llm.types import estimate_tokens
from .records import StoredMessage

SAFETY_MARGIN_TOKENS = 200


class ChatMessage(TypedDict):
    """One message of the conversation, in the provider's wire shape."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class TokenBudget:
    model_context_limit: int
    response_max_tokens: int = 1200
    safety_margin_tokens: int = SAFETY_MARGIN_TOKENS

    def context_budget(self, system_tokens: int) -> int:
        """What the history may take (negative when even the system prompt overflows)."""
        return self.model_context_limit - (self.response_max_tokens + self.safety_margin_tokens) - system_tokens


@dataclass(frozen=True)
class HistoryOptions:
    """The window's size in messages and the history's token budget (None: no budget)."""

    window_size: int = 12
    max_tokens_budget: int | None = None


class HistoryAssembler:
    def build(self, messages: Sequence[StoredMessage], options: HistoryOptions) -> list[ChatMessage]:
        """``messages``: the session's earlier messages in order (the new user message excluded)."""
        said = [message for message in messages if message.in_history]
        window = said[-options.window_size :] if options.window_size > 0 else []
        required = _latest_pair(window)
        budget = options.max_tokens_budget
        kept: list[StoredMessage] = []
        used = 0
        open_tail = True
        for index in range(len(window) - 1, -1, -1):
            message = window[index]
            cost = estimate_tokens(message.content)
            fits = budget is None or used + cost <= budget
            if index in required or (open_tail and fits):
                kept.append(message)
                used += cost
            else:
                open_tail = False
        kept.reverse()
        return [ChatMessage(role=message.role, content=message.content) for message in kept]


def history_budget(budget: TokenBudget, system_prompt: str, user_message: str, cap: int | None = None) -> int:
    """The tokens the history may use once the system prompt and the new message are counted."""
    available = budget.context_budget(estimate_tokens(system_prompt)) - estimate_tokens(user_message)
    return max(0, available if cap is None else min(available, cap))


def _latest_pair(window: Sequence[StoredMessage]) -> set[int]:
    for index in range(len(window) - 1, 0, -1):
        if window[index].role == "assistant" and window[index - 1].role == "user":
            return {index - 1, index}
    return set()
