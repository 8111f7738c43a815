"""LLMOutputParser (docs/chat-and-templates.md#which-fence-is-parsed): the strict JSON at the end of a chat answer,
extracted and validated in one place (parse-and-validate, docs/engine.md#tool-arguments), with its
error classes (docs/chat-and-templates.md#parser-error-classes).

Extraction: of the answer's fences (``fences.find_fences``), the LAST one labelled ``json`` wins
(models restate an example first and answer last); without one, the LAST unlabelled block is a
candidate only if it starts with ``{`` and ends with ``}``. A fence body over 32 KB (UTF-8) is not
parsed.

Validation: strict JSON (no comments, trailing commas, NaN / Infinity, or repeated keys), an
object whose ``schema`` is ``ai_chat_process_template.v1``, the AI-input model
(``draft_schema``), and the step-plan rules shared with the template API
(``templates.validation``: seq 1..N without gaps or duplicates, seq 1 based on the goal,
offsetDays an integer in -365..365, dependsOn only to earlier seq, no cycle).

Error classes, one per thing that went wrong:
- ``MissingFence``: no fence at all.
- ``NonJsonFence``: fences, but none labelled json and no unlabelled ``{...}`` block.
- ``JsonParseError``: the candidate is not strict JSON (or over 32 KB, or an unclosed fence that
  does not parse: a truncated answer).
- ``SchemaMismatch``: JSON, but not an object with ``"schema": "ai_chat_process_template.v1"``.
- ``ValidationFailed``: the right schema id, wrong fields or a broken step plan.

``extract_template_json`` never raises: it returns a ``TemplateDraftParseResult``, and
``compose_content`` gives the text a client sees: on success the prose followed by ONE canonical
```json fence; on failure the prose without any JSON-like fence, so no client ever sees invalid
JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import ValidationError

from ..templates.validation import check_step_plan
from ..validation_errors import describe_errors
from .draft_schema import SCHEMA_ID, AiChatProcessTemplateJson
from .fences import Fence, find_fences, remove_fences

MAX_FENCE_BYTES = 32 * 1024
MAX_ERRORS = 20
EMPTY_PROSE_NOTICE = "回答の本文を読み取れませんでした。お手数ですが、もう一度お試しください。"
INVALID_STRUCTURED_JSON = "InvalidStructuredJson"  # the AIConversationErrorCode of an invalid JSON


class TemplateDraftError(Exception):
    """Base of the parser's error classes; ``errors`` lists what is wrong (no answer text)."""

    error_class: ClassVar[str] = "TemplateDraftError"

    def __init__(self, message: str, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.errors = (errors or [message])[:MAX_ERRORS]


class MissingFence(TemplateDraftError):
    error_class = "MissingFence"


class NonJsonFence(TemplateDraftError):
    error_class = "NonJsonFence"


class JsonParseError(TemplateDraftError):
    error_class = "JsonParseError"


class SchemaMismatch(TemplateDraftError):
    error_class = "SchemaMismatch"


class ValidationFailed(TemplateDraftError):
    error_class = "ValidationFailed"


ERROR_CLASSES = ("MissingFence", "NonJsonFence", "JsonParseError", "SchemaMismatch", "ValidationFailed")


@dataclass(frozen=True)
class TemplateDraftParseResult:
    """The parser's verdict: ``ok``, ``schema``, ``data`` on success, ``errors`` and the class otherwise."""

    ok: bool
    schema: str | None = None
    data: AiChatProcessTemplateJson | None = None
    error_class: str | None = None
    errors: list[str] = field(default_factory=list)
    fences: list[Fence] = field(default_factory=list)

    @property
    def error_code(self) -> str | None:
        return None if self.ok else INVALID_STRUCTURED_JSON


class LLMOutputParser:
    def __init__(self, max_fence_bytes: int = MAX_FENCE_BYTES) -> None:
        self._max_fence_bytes = max_fence_bytes

    def extract_template_json(self, content: str) -> TemplateDraftParseResult:
        fences = find_fences(content)
        try:
            data = self.parse_and_validate(select_candidate(fences), self._max_fence_bytes)
        except TemplateDraftError as error:
            schema = SCHEMA_ID if isinstance(error, ValidationFailed) else None
            return TemplateDraftParseResult(
                ok=False, schema=schema, error_class=error.error_class, errors=error.errors, fences=fences
            )
        return TemplateDraftParseResult(ok=True, schema=data.schema_id, data=data, fences=fences)

    @staticmethod
    def parse_and_validate(fence: Fence, max_bytes: int = MAX_FENCE_BYTES) -> AiChatProcessTemplateJson:
        """One fence's body -> the validated JSON, or one of the error classes."""
        body = fence.body.strip()
        if len(body) > max_bytes or (len(body) * 4 > max_bytes and len(body.encode("utf-8", "replace")) > max_bytes):
            raise JsonParseError(f"the JSON fence is over {max_bytes} bytes; not parsed")
        value = strict_json_loads(body, truncated=not fence.closed)
        if not isinstance(value, dict):
            raise SchemaMismatch(f"the JSON is a {type(value).__name__}, not an object with a schema id")
        schema = value.get("schema")
        if schema != SCHEMA_ID:
            shown = repr(schema)[:80] if schema is not None else "missing"
            raise SchemaMismatch(f"schema is {shown}, expected {SCHEMA_ID!r}")
        try:
            data = AiChatProcessTemplateJson.model_validate(value)
        except ValidationError as error:
            found = describe_errors(error, limit=MAX_ERRORS)
            raise ValidationFailed("the JSON does not match the schema", found) from None
        draft = data.process_template_draft
        if draft is not None:
            problems = check_step_plan(draft.step_templates)
            if problems:
                raise ValidationFailed(
                    f"stepTemplates: {problems[0].message}", [f"{p.error_class}: {p.message}" for p in problems]
                )
        return data


def select_candidate(fences: list[Fence]) -> Fence:
    """The fence to parse (docs/chat-and-templates.md#which-fence-is-parsed); raises MissingFence / NonJsonFence."""
    if not fences:
        raise MissingFence("the answer has no code fence")
    labelled = [fence for fence in fences if fence.label == "json"]
    if labelled:
        return labelled[-1]
    unlabelled = [fence for fence in fences if fence.label == ""]
    if not unlabelled:
        labels = sorted({fence.label for fence in fences})
        raise NonJsonFence(f"no json fence; fences are labelled {', '.join(labels)[:100]}")
    last = unlabelled[-1]
    body = last.body.strip()
    if body.startswith("{") and body.endswith("}"):
        return last
    raise NonJsonFence("the last unlabelled block does not start with '{' and end with '}'")


def strict_json_loads(text: str, truncated: bool = False) -> Any:
    """json.loads without Python's extensions (NaN, Infinity) and without repeated keys; the
    value must re-encode as UTF-8 (no lone surrogates from ``\\ud800`` escapes)."""
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except json.JSONDecodeError as error:
        hint = " (the fence is not closed: the answer was cut off)" if truncated else ""
        where = f"line {error.lineno} column {error.colno}"
        raise JsonParseError(f"not strict JSON: {error.msg} at {where}{hint}") from None
    except (ValueError, RecursionError, UnicodeEncodeError) as error:
        raise JsonParseError(f"not strict JSON: {str(error)[:200]}") from None
    return value


def compose_content(content: str, result: TemplateDraftParseResult) -> str:
    """What the client sees and what is stored: never a broken or second JSON fence."""
    prose = remove_fences(content, [fence for fence in result.fences if fence.json_like])
    if result.ok and result.data is not None:
        prose = prose or result.data.answer.strip()
        fence = json.dumps(result.data.as_json(), ensure_ascii=False)
        return f"{prose}\n\n```json\n{fence}\n```"
    return prose or EMPTY_PROSE_NOTICE


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for key, item in pairs:
        if key in value:
            raise ValueError(f"key {key[:40]!r} appears twice in one object")
        value[key] = item
    return value
