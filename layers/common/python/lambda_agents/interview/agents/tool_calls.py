"""parse_and_validate_tool_args (docs/engine.md#tool-arguments) and the FunctionCallResult shape
(docs/engine.md#tool-results).

Every tool call's arguments go through ``parse_and_validate_tool_args``: JSON first, then the
tool's pydantic input model. It never raises: a malformed call becomes an ``InvalidToolArgs``
whose message names the tool and the offending parameters, and that message goes back to the
model as the tool's error result, so the model can correct itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Generic, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...validation_errors import summarise_errors

InputT = TypeVar("InputT", bound=BaseModel)
MAX_ARGUMENT_CHARS = 50_000
MAX_REPORTED_ERRORS = 8


@dataclass(frozen=True)
class ValidToolArgs(Generic[InputT]):
    data: InputT


@dataclass(frozen=True)
class InvalidToolArgs:
    error: str


def parse_and_validate_tool_args(
    tool_args: object, schema: type[InputT], tool_name: str
) -> ValidToolArgs[InputT] | InvalidToolArgs:
    """``tool_args`` is the provider's arguments string (or an already decoded object)."""
    if isinstance(tool_args, (str, bytes, bytearray)):
        text = tool_args.decode("utf-8", "replace") if isinstance(tool_args, (bytes, bytearray)) else tool_args
        if len(text) > MAX_ARGUMENT_CHARS:
            return InvalidToolArgs(
                f"Invalid JSON for {tool_name}: arguments longer than {MAX_ARGUMENT_CHARS} characters"
            )
        try:
            decoded: Any = json.loads(text) if text.strip() else {}
        except (ValueError, RecursionError) as error:
            return InvalidToolArgs(f"Invalid JSON for {tool_name}: {_first_line(error)}")
    else:
        decoded = tool_args
    if not isinstance(decoded, dict):
        return InvalidToolArgs(f"Invalid JSON for {tool_name}: expected an object, got {type(decoded).__name__}")
    try:
        return ValidToolArgs(schema.model_validate(decoded))
    except ValidationError as error:
        return InvalidToolArgs(
            f"Invalid parameters for {tool_name}: "
            f"{summarise_errors(error, limit=MAX_REPORTED_ERRORS, root='arguments')}"
        )
    except (ValueError, TypeError, RecursionError) as error:
        return InvalidToolArgs(f"Invalid parameters for {tool_name}: {_first_line(error)}")


def _first_line(error: BaseException) -> str:
    return (str(error).splitlines() or [type(error).__name__])[0][:200]


class ResultBody(BaseModel):
    """``result.message`` is what the model reads on its next call; the UI never shows it."""

    model_config = ConfigDict(extra="forbid")

    message: str


class FunctionCallResult(BaseModel):
    """{status, result.message}: the base every agent's result type extends with its own data."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["success", "error"]
    result: ResultBody = Field(default_factory=lambda: ResultBody(message=""))

    @classmethod
    def success(cls, message: str, **data: Any) -> Self:
        return cls(status="success", result=cls._body_type()(message=message, **data))

    @classmethod
    def error(cls, message: str, **data: Any) -> Self:
        """``data``: what the RunStep records of a refusal (a failed QuickCheck's verdict); the
        model reads only the message (``for_model``)."""
        return cls(status="error", result=cls._body_type()(message=message, **data))

    @classmethod
    def _body_type(cls) -> type[ResultBody]:
        annotation = cls.model_fields["result"].annotation
        return annotation if isinstance(annotation, type) and issubclass(annotation, ResultBody) else ResultBody

    def for_model(self) -> str:
        """The tool message content: status and message only (minimal tool results: docs/engine.md#tool-results)."""
        return json.dumps({"status": self.status, "result": {"message": self.result.message}}, ensure_ascii=False)
