"""What a truncated answer still needs, and what the next attempt may ask for.

A ``finish_reason=length`` answer is cut where its budget ran out, so its partial text says how
much was written for how many tokens. The partial JSON is read with pydantic_core's partial
mode (the trailing string included) and walked against the output schema:

- an array with ``minItems`` still owes ``minItems - written`` items, each standing in as the
  complete item nearest the average size of those it wrote; an array without ``minItems`` is
  taken as half written (as many items again, up to ``maxItems``), the one guess the schema
  leaves open;
- a required field not written yet stands in as a complete value from the same place (another
  item's field), else is built from its schema with strings and numbers of the average size of
  the answer's complete ones (enum: its longest value; const, booleans and null: their size);
- the value being written when the budget ran out is lengthened to what its place usually takes.
The answer so completed, laid out as the answer lays out its JSON (indentation, spaces, \\u
escapes), less what it wrote, is what is still to come.
An answer cut before it completed a string (when strings are still to come) gives no evidence of
its verbosity: then the next attempt asks for the limit itself, once.

The remaining characters are turned into tokens at the answer's own rate (tokens spent per
character written). Tokens the text cannot account for (reasoning tokens, or more than
``MAX_TOKENS_PER_CHAR`` per character) are counted as spent again on the next attempt.

``plan_after_truncation`` turns the estimate into the next budget: the estimate plus
``NEED_MARGIN`` (at least ``MIN_MARGIN_TOKENS``), bounded by the ceiling and by what the deadline
allows; an estimate above that bound stops at once, because a call that must truncate again is
a wasted call.

Tool-call arguments and prompted text (prose, a fence, then the JSON) are read the same way; a
free-text answer without a schema has no structure to read and is treated as no evidence.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import from_json

from .policy import DEADLINE_SLACK_S, Deadline
from .types import ChatRequest, ChatResponse

NEED_MARGIN = 0.25
MIN_MARGIN_TOKENS = 32
MAX_TOKENS_PER_CHAR = 2.0
DEFAULT_STRING_CHARS = 24.0
DEFAULT_NUMBER_CHARS = 3.0
_OPEN_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n")
_INDENT = re.compile(r"\n([ \t]+)\S")
_SPACED_ITEM = re.compile(r'(?:"|\d|true|false|null|[\]}]),[ \t]+(?:"|[\[{\d-]|true|false|null)')
_SPACED_KEY = re.compile(r'":[ \t]+')
_UNICODE_ESCAPE = re.compile(r"\\u[0-9a-fA-F]{4}")

Path = tuple[str, ...]
ITEM = "[]"


@dataclass(frozen=True)
class NeedEstimate:
    """Completion tokens the whole answer needs (``tokens``), or None when the partial answer
    gives no evidence of its size. ``spent`` is what the truncated attempt used."""

    spent: int
    tokens: int | None
    basis: str

    @property
    def remaining(self) -> int | None:
        return None if self.tokens is None else max(0, self.tokens - self.spent)


@dataclass(frozen=True)
class TruncationPlan:
    """``max_tokens`` for the next attempt, or None: stop now (``reason`` says why;
    ``by_deadline`` when the time left, not the ceiling, was the bound)."""

    estimate: NeedEstimate
    max_tokens: int | None
    reason: str
    by_deadline: bool = False


def with_margin(tokens: int) -> int:
    """A need plus the documented margin (NEED_MARGIN, at least MIN_MARGIN_TOKENS)."""
    return max(math.ceil(tokens * (1 + NEED_MARGIN)), tokens + MIN_MARGIN_TOKENS)


def plan_after_truncation(estimate: NeedEstimate, *, previous_max: int, limit: int) -> TruncationPlan:
    """The next attempt's budget after a truncation at ``previous_max``; ``limit`` is the lower of
    the ceiling and what the deadline allows."""
    if estimate.tokens is None:
        if limit > previous_max:
            return TruncationPlan(estimate, limit, "no evidence of the answer's size: asking the limit once")
        return TruncationPlan(estimate, None, f"truncated at the limit ({limit} tokens)")
    if estimate.tokens > limit:
        return TruncationPlan(
            estimate, None, f"the answer needs about {estimate.tokens} tokens, more than the limit ({limit})"
        )
    budget = min(limit, with_margin(estimate.tokens))
    if budget <= previous_max:
        return TruncationPlan(estimate, None, f"truncated at the limit ({limit} tokens)")
    return TruncationPlan(estimate, budget, f"the answer needs about {estimate.tokens} tokens")


def plan_retry(
    request: ChatRequest,
    response: ChatResponse,
    *,
    spent: int,
    schema: dict[str, Any] | None,
    ceiling: int,
    duration_s: float,
    deadline: Deadline | None,
) -> TruncationPlan:
    """The rule every caller follows after a truncated answer (the engine, one-call retries, the
    interview's agent loop). What the deadline allows is the attempt's own pace (``spent`` tokens
    in ``duration_s``, latency included, so it errs on the side of stopping) over the time left."""
    estimate = estimate_after_truncation(request, response, spent, schema)
    limit, by_deadline = ceiling, False
    if deadline is not None and duration_s > 0:
        allowed = int(spent * max(0.0, deadline.remaining_s() - DEADLINE_SLACK_S) / duration_s)
        if allowed < limit:
            limit, by_deadline = allowed, True
    plan = plan_after_truncation(estimate, previous_max=spent, limit=limit)
    if by_deadline:
        return TruncationPlan(plan.estimate, plan.max_tokens, f"{plan.reason}, allowed by the deadline", True)
    return plan


def estimate_after_truncation(
    request: ChatRequest, response: ChatResponse, spent: int, schema: dict[str, Any] | None
) -> NeedEstimate:
    """Estimate from a truncated response: the forced or last tool call's arguments against its
    tool's parameters, else the text against ``schema`` (the output model's, or None)."""
    reasoning = response.usage.reasoning_tokens
    written = (response.content or "") + "".join(call.arguments for call in response.tool_calls)
    if response.tool_calls:
        last = response.tool_calls[-1]
        tool_schema = _tool_schema(request, last.name)
        return estimate_need(last.arguments, tool_schema, spent=spent, reasoning_tokens=reasoning, written=written)
    return estimate_need(response.content or "", schema, spent=spent, reasoning_tokens=reasoning)


def estimate_need(
    text: str,
    schema: dict[str, Any] | None,
    *,
    spent: int,
    reasoning_tokens: int = 0,
    written: str | None = None,
) -> NeedEstimate:
    """Total completion tokens an answer of ``schema`` needs, given the ``text`` it wrote with
    ``spent`` tokens before it was cut. ``written`` is everything the attempt wrote, when more
    than ``text`` (other tool calls, prose around the arguments)."""
    everything = text if written is None else written
    if schema is None:
        return NeedEstimate(spent, None, "no schema to read the answer against")
    start = _json_start(text)
    if start is None:
        return NeedEstimate(spent, None, "no JSON written yet")
    json_text = text[start:]
    try:
        value = from_json(json_text, allow_partial="trailing-strings")
        # The plain partial mode drops an unfinished trailing string: equal values mean the
        # answer was cut after its last string closed.
        closed = from_json(json_text, allow_partial=True) == value
    except ValueError:
        return NeedEstimate(spent, None, "the partial JSON does not parse")
    layout = _Layout.of(json_text)
    evidence = _Evidence(layout, last_leaf_closed=closed)
    try:
        evidence.collect(schema, value, (), is_open=True)
        completed = evidence.complete(schema, value, ())
        # The answer completed with stand-ins (its own complete values where it has them), in its
        # own layout (indentation and spacing cost characters), less what it has written.
        remaining_chars = max(0, len(layout.dumps(completed)) - len(layout.dumps(value)))
    except (RecursionError, ValueError, OverflowError):  # absurd nesting or numbers: no estimate
        return NeedEstimate(spent, None, "the partial answer cannot be measured")
    if evidence.guessed or not evidence.any_complete():
        return NeedEstimate(spent, None, "no complete value of the kind still to come written yet")
    visible = max(0, spent - max(0, reasoning_tokens))
    per_char = min(MAX_TOKENS_PER_CHAR, visible / max(1, len(everything)))
    return NeedEstimate(spent, math.ceil(spent + remaining_chars * per_char), "partial answer against the schema")


def _tool_schema(request: ChatRequest, name: str) -> dict[str, Any] | None:
    tool = request.tool(name)
    return dict(tool.parameters) if tool is not None else None


def _json_start(text: str) -> int | None:
    """Where the answer's JSON starts: after the last opened ```json fence, else at the first
    brace or bracket (prompted answers may begin with prose)."""
    fences = list(_OPEN_FENCE.finditer(text))
    offset = fences[-1].end() if fences else 0
    brace, bracket = text.find("{", offset), text.find("[", offset)
    found = [index for index in (brace, bracket) if index >= 0]
    return min(found) if found else None


@dataclass(frozen=True)
class _Layout:
    """How an answer lays its JSON out: indented, or on one line with or without spaces after
    separators; non-ASCII written raw or as \\u escapes."""

    indent: str | None
    item_separator: str
    key_separator: str
    ascii_only: bool

    @classmethod
    def of(cls, text: str) -> _Layout:
        ascii_only = _UNICODE_ESCAPE.search(text) is not None
        if "\n" in text.strip():
            indent = _INDENT.search(text)
            return cls(indent.group(1) if indent else "  ", ",", ": ", ascii_only)
        item = ", " if _SPACED_ITEM.search(text) else ","
        key = ": " if _SPACED_KEY.search(text) else ":"
        return cls(None, item, key, ascii_only)

    def dumps(self, value: Any) -> str:
        return json.dumps(
            value,
            ensure_ascii=self.ascii_only,
            indent=self.indent,
            separators=(self.item_separator, self.key_separator),
        )


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    return "container"


@dataclass
class _Evidence:
    """The complete values of a partial answer, by schema path and by kind, and the answer
    completed with stand-ins built from them. Sizes are written sizes, in the answer's layout."""

    layout: _Layout
    last_leaf_closed: bool = False
    guessed: bool = False  # a stand-in had no evidence in the answer (no complete string yet)
    by_path: dict[Path, list[Any]] = field(default_factory=dict)
    by_kind: dict[str, list[int]] = field(default_factory=dict)

    def _written(self, value: Any) -> int:
        return len(self.layout.dumps(value))

    def any_complete(self) -> bool:
        return any(self.by_kind.get(kind) for kind in ("string", "number", "boolean", "null"))

    def _closed_leaf(self, value: Any) -> bool:
        """Whether the last leaf written is whole: a closed string, true / false / null (a
        number may still grow)."""
        return isinstance(value, bool) or value is None or (isinstance(value, str) and self.last_leaf_closed)

    def collect(self, schema: dict[str, Any], value: Any, path: Path, *, is_open: bool) -> None:
        node = _branch_for(schema, value)
        if isinstance(value, dict):
            properties = node.get("properties") or {}
            keys = list(value)
            for index, key in enumerate(keys):
                child_open = is_open and index == len(keys) - 1
                self.collect(properties.get(key) or {}, value[key], (*path, key), is_open=child_open)
        elif isinstance(value, list):
            items = _items(node)
            for index, item in enumerate(value):
                child_open = is_open and index == len(value) - 1
                self.collect(items, item, (*path, ITEM), is_open=child_open)
        if is_open and (isinstance(value, (dict, list)) or not self._closed_leaf(value)):
            return
        self.by_path.setdefault(path, []).append(value)
        if "enum" not in node and "const" not in node:
            # A fixed choice says nothing about how verbose the free values are.
            self.by_kind.setdefault(_kind(value), []).append(self._written(value))

    def complete(self, schema: dict[str, Any], value: Any, path: Path) -> Any:
        """``value``, the open value at ``path``, completed with stand-ins."""
        node = _branch_for(schema, value)
        if isinstance(value, dict):
            properties: dict[str, Any] = node.get("properties") or {}
            done = dict(value)
            if done:
                last = list(done)[-1]
                done[last] = self.complete(properties.get(last) or {}, done[last], (*path, last))
            for name, sub in properties.items():
                if name not in done:
                    done[name] = self.stand_in(sub, (*path, name))
            return done
        if isinstance(value, list):
            items = _items(node)
            done_items = list(value)
            if done_items:
                done_items[-1] = self.complete(items, done_items[-1], (*path, ITEM))
            owed = _expected_count(node, len(value)) - len(value)
            return done_items + [self.stand_in(items, (*path, ITEM)) for _ in range(max(0, owed))]
        if self._closed_leaf(value):
            return value
        if isinstance(value, str) and (node.get("enum") or "const" in node):
            choices = [choice for choice in node.get("enum") or [node.get("const")] if isinstance(choice, str)]
            started = [choice for choice in choices if choice.startswith(value)] or choices or [value]
            return max(started, key=len)
        if isinstance(value, str):
            wanted = self._size(node, path, "string") - self._written(value)
            return value + "x" * max(0, round(wanted))
        if isinstance(value, int):
            wanted = self._size(node, path, "number") - self._written(value)
            return int(f"{value}{'0' * max(0, round(wanted))}")
        return value

    def stand_in(self, schema: dict[str, Any], path: Path) -> Any:
        """A whole value for ``path`` that is not written yet: a complete value the answer wrote
        at the same place (the one nearest their average size), else one built from the schema."""
        seen = self.by_path.get(path)
        if seen:
            sizes = [self._written(value) for value in seen]
            average = sum(sizes) / len(sizes)
            return seen[min(range(len(seen)), key=lambda index: abs(sizes[index] - average))]
        node = _first_branch(schema)
        if "const" in node:
            return node["const"]
        if node.get("enum"):
            return max(node["enum"], key=lambda value: len(_compact(value)))
        kind = node.get("type")
        if kind == "object" or "properties" in node:
            properties: dict[str, Any] = node.get("properties") or {}
            return {name: self.stand_in(sub, (*path, name)) for name, sub in properties.items()}
        if kind == "array":
            items = _items(node)
            return [self.stand_in(items, (*path, ITEM)) for _ in range(_expected_count(node, 0))]
        if kind == "boolean":
            return False
        if kind == "null":
            return None
        if kind in ("integer", "number"):
            return int("9" * max(1, round(self._size(node, path, "number"))))
        return "x" * max(0, round(self._size(node, path, "string")) - 2)

    def _size(self, node: dict[str, Any], path: Path, kind: str) -> float:
        """Expected written size of a leaf at ``path``: the average of complete values there,
        else of complete values of its kind in the answer (within the schema's length limits)."""
        seen = self.by_path.get(path)
        sizes = [self._written(value) for value in seen] if seen else self.by_kind.get(kind)
        if not sizes:
            if kind == "string":
                self.guessed = True
            return DEFAULT_STRING_CHARS if kind == "string" else DEFAULT_NUMBER_CHARS
        estimate = sum(sizes) / len(sizes)
        if self.layout.ascii_only:
            return estimate  # escaped characters: the limits count characters, not what is written
        if kind == "string" and "maxLength" in node:
            estimate = min(estimate, int(node["maxLength"]) + 2)
        if kind == "string" and "minLength" in node:
            estimate = max(estimate, int(node["minLength"]) + 2)
        return estimate


def _expected_count(schema: dict[str, Any], written: int) -> int:
    """Items an array will hold: ``minItems`` when set, else as many again as written (at least
    one), never more than ``maxItems``."""
    minimum = int(schema.get("minItems") or 0)
    maximum = schema.get("maxItems")
    count = max(minimum, written) if minimum > 0 else max(written * 2, 1)
    if maximum is not None:
        count = min(count, max(int(maximum), written))
    return count


def _items(schema: dict[str, Any]) -> dict[str, Any]:
    items = schema.get("items")
    return items if isinstance(items, dict) else {}


def _first_branch(schema: dict[str, Any]) -> dict[str, Any]:
    """A nullable union's value branch (the null branch says nothing about the size)."""
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list) and branches:
        for branch in branches:
            if isinstance(branch, dict) and branch.get("type") != "null":
                return branch
    return schema


def _branch_for(schema: dict[str, Any], value: Any) -> dict[str, Any]:
    """The union branch a written value belongs to (by its JSON kind)."""
    branches = schema.get("anyOf") or schema.get("oneOf")
    if not isinstance(branches, list):
        return schema
    wanted = {
        dict: ("object",),
        list: ("array",),
        str: ("string",),
        bool: ("boolean",),
        type(None): ("null",),
    }.get(type(value), ("integer", "number"))
    for branch in branches:
        if not isinstance(branch, dict):
            continue
        if branch.get("type") in wanted or ("properties" in branch and "object" in wanted):
            return branch
    return _first_branch(schema)
