"""The seeded fault mix every side of the peer benchmark runs against.

How it works, and why: benchmarks/README.md (its section).
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from devtools.fake_openai import (
    FakeOpenAIServer,
    Fault,
    Reply,
    Slow,
    Step,
    cut_to_budget,
    prompt_tokens_of,
    token_limit,
)

from .commander_task import SLOT_COUNT, valid_answer

USER_MARKER = "bench-user-"
_USER_PATTERN = re.compile(re.escape(USER_MARKER) + r"(\d+)")
DEFAULT_CAP = 2048  # max_tokens a request without one gets ("the model's default cap")
RETRY_AFTER_S = 0.2
SLOW_S = 1.5
REFUSAL_TEXT = "I'm sorry, I can't help with that request."


@dataclass(frozen=True)
class AnswerSizes:
    """Completion tokens a whole answer needs, drawn per user in these ranges."""

    compact: tuple[int, int] = (1500, 2000)  # fit the default cap
    verbose: tuple[int, int] = (2750, 4700)  # 500 + 150 per nudge for 15 (2,750) up to past 4,095


@dataclass(frozen=True)
class FaultRates:
    verbose: float = 0.30
    wrong_length: float = 0.10
    refusal: float = 0.05
    content_filter: float = 0.05
    rate_limited: float = 0.10
    server_error: float = 0.10
    slow: float = 0.05


@dataclass(frozen=True)
class FaultPlan:
    """What the model does for one user, attempt after attempt."""

    user_number: int
    answer_tokens: int
    verbose: bool = False
    transient: tuple[int, ...] = ()  # HTTP statuses answered first, one per request (429 / 500)
    slow_first_answer: bool = False
    answer_faults: tuple[str, ...] = ()  # "wrong_length" / "content_filter", once each, in order
    refuses: bool = False

    @classmethod
    def for_user(
        cls, seed: int, user_number: int, rates: FaultRates = FaultRates(), sizes: AnswerSizes = AnswerSizes()
    ) -> FaultPlan:
        rng = random.Random(f"{seed}:{user_number}")  # str seeds hash deterministically (not hash())
        verbose = rng.random() < rates.verbose
        answer_tokens = rng.randint(*(sizes.verbose if verbose else sizes.compact))
        transient = tuple(
            status for status, rate in ((429, rates.rate_limited), (500, rates.server_error)) if rng.random() < rate
        )
        slow = rng.random() < rates.slow
        faults = tuple(
            kind
            for kind, rate in (("wrong_length", rates.wrong_length), ("content_filter", rates.content_filter))
            if rng.random() < rate
        )
        refuses = rng.random() < rates.refusal
        return cls(user_number, answer_tokens, verbose, transient, slow, faults, refuses)

    @property
    def labels(self) -> list[str]:
        labels = []
        if self.verbose:
            labels.append("verbose")
        labels += [{429: "429", 500: "500"}[status] for status in self.transient]
        labels += ["slow"] if self.slow_first_answer else []
        labels += list(self.answer_faults)
        labels += ["refusal"] if self.refuses else []
        return labels

    def step(self, request_number: int, max_tokens: int | None, tool_name: str | None) -> Step:
        """The answer to this user's ``request_number``-th request (0-based)."""
        if request_number < len(self.transient):
            status = self.transient[request_number]
            return Fault(status=status, retry_after=RETRY_AFTER_S if status == 429 else None)
        answer_number = request_number - len(self.transient)
        reply = self._answer(answer_number, max_tokens or DEFAULT_CAP, tool_name)
        if self.slow_first_answer and answer_number == 0:
            return Slow(SLOW_S, then=reply)
        return reply

    def _answer(self, answer_number: int, cap: int, tool_name: str | None) -> Reply:
        if self.refuses:
            return Reply(refusal=REFUSAL_TEXT, completion_tokens=12)
        fault = self.answer_faults[answer_number] if answer_number < len(self.answer_faults) else None
        answer = valid_answer(self.user_number)
        tokens = self.answer_tokens
        if fault == "wrong_length":
            answer["appNudges"] = answer["appNudges"][: SLOT_COUNT - 1]
            tokens = tokens * (SLOT_COUNT - 1) // SLOT_COUNT
        text = json.dumps(answer, ensure_ascii=False)
        finish = "stop"
        if fault == "content_filter" and tokens // 3 <= cap:
            # The filter stops the answer a third of the way in (unless the budget ran out first).
            text, tokens, finish = text[: len(text) // 3], tokens // 3, "content_filter"
        elif tokens > cap:
            # The model stops at max_tokens: the same share of the text, billed at the cap.
            text, tokens, finish = cut_to_budget(text, cap, tokens), cap, "length"
        if tool_name is not None:
            return Reply(
                tool_arguments=text,
                tool_name=tool_name,
                finish_reason="tool_calls" if finish == "stop" else finish,
                completion_tokens=tokens,
            )
        return Reply(content=text, finish_reason=finish, completion_tokens=tokens)


@dataclass
class Bill:
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests_by_user: dict[int, int] = field(default_factory=dict)
    tokens_by_user: dict[int, int] = field(default_factory=dict)
    max_tokens_by_user: dict[int, list[int | None]] = field(default_factory=dict)  # in request order
    truncated: int = 0  # answers cut at max_tokens (finish_reason=length)
    truncated_by_user: dict[int, int] = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def user_of(body: dict[str, Any]) -> int | None:
    match = _USER_PATTERN.search(json.dumps(body.get("messages", []), ensure_ascii=False))
    return int(match.group(1)) if match else None


def forced_tool_name(body: dict[str, Any]) -> str | None:
    tools = body.get("tools") or []
    if not tools:
        return None
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        return str(choice.get("function", {}).get("name"))
    return str(tools[0].get("function", {}).get("name", "final_result"))


class FaultMixServer(FakeOpenAIServer):
    """The shared fake server with the script replaced by the per-user plans; bills every answer."""

    def __init__(
        self,
        seed: int,
        user_numbers: list[int],
        rates: FaultRates = FaultRates(),
        sizes: AnswerSizes = AnswerSizes(),
    ) -> None:
        super().__init__()
        self.plans = {number: FaultPlan.for_user(seed, number, rates, sizes) for number in user_numbers}
        self.bill = Bill()
        self._seen: dict[int, int] = {}
        self._bill_lock = threading.Lock()

    def _next_step(self, body: dict[str, Any]) -> Step | None:
        number = user_of(body)
        if number is None or number not in self.plans:
            return Fault(status=400, message="benchmark request without a known bench user in the prompt")
        with self._bill_lock:
            attempt = self._seen.get(number, 0)
            self._seen[number] = attempt + 1
        limit = token_limit(body)
        step = self.plans[number].step(attempt, limit, forced_tool_name(body))
        reply = step.then if isinstance(step, Slow) else step
        prompt = prompt_tokens_of(body)
        with self._bill_lock:
            self.bill.requests += 1
            self.bill.requests_by_user[number] = self.bill.requests_by_user.get(number, 0) + 1
            self.bill.max_tokens_by_user.setdefault(number, []).append(limit)
            if isinstance(reply, Reply):
                if reply.finish_reason == "length":
                    self.bill.truncated += 1
                    self.bill.truncated_by_user[number] = self.bill.truncated_by_user.get(number, 0) + 1
                completion_tokens = reply.completion_tokens or 0
                self.bill.prompt_tokens += prompt
                self.bill.completion_tokens += completion_tokens
                self.bill.tokens_by_user[number] = self.bill.tokens_by_user.get(number, 0) + prompt + completion_tokens
        if isinstance(reply, Reply):
            reply = dataclasses.replace(reply, prompt_tokens=prompt)
            return Slow(step.seconds, then=reply) if isinstance(step, Slow) else reply
        return step
