"""Hypothesis strategies derived from pydantic models: whatever a model accepts, drawn from its own
field types, so a test built on them follows the model when it changes.

``valid_instances(Model)`` draws wire-shaped dicts (aliases) from each field's annotation (str,
bool, int, float, Literal, Enum, list, dict, optional, nested models) within its length and
bound constraints, and keeps those the model validates (validators a type cannot express, such
as X's weighted length, only filter).
"""

from __future__ import annotations

import enum
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

MAX_TEXT = 40
MAX_ITEMS = 4
TEXT = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8", exclude_categories=("Cs",)),  # any valid text, emoji and CJK included
        st.sampled_from(list("あ日😷 #@")),
    ),
    max_size=MAX_TEXT,
)


def _constraints(metadata: list[Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for item in metadata:
        for kind, key, attribute in (
            (MinLen, "min_len", "min_length"),
            (MaxLen, "max_len", "max_length"),
            (Ge, "ge", "ge"),
            (Gt, "gt", "gt"),
            (Le, "le", "le"),
            (Lt, "lt", "lt"),
        ):
            if isinstance(item, kind):
                found[key] = getattr(item, attribute)
    return found


def for_annotation(annotation: Any, metadata: list[Any] | None = None) -> st.SearchStrategy[Any]:
    """A strategy of JSON-shaped values the annotation accepts."""
    limits = _constraints(metadata or [])
    origin = get_origin(annotation)
    if origin is Annotated:
        return for_annotation(get_args(annotation)[0], [*(metadata or []), *annotation.__metadata__])
    if origin in (Union, types.UnionType):
        return st.one_of(*(for_annotation(arg, metadata) for arg in get_args(annotation)))
    if origin is Literal:
        return st.sampled_from(get_args(annotation))
    if origin is list:
        (item,) = get_args(annotation) or (Any,)
        low = limits.get("min_len", 0)
        return st.lists(for_annotation(item), min_size=low, max_size=max(low, min(limits.get("max_len", 4), MAX_ITEMS)))
    if origin is dict:
        key, value = get_args(annotation) or (str, Any)
        return st.dictionaries(for_annotation(key), for_annotation(value), max_size=MAX_ITEMS)
    if annotation is type(None):
        return st.none()
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return valid_instances(annotation)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return st.sampled_from([member.value for member in annotation])
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        low = limits.get("ge", limits.get("gt", -(2**31) - 1) + 1)
        high = limits.get("le", limits.get("lt", 2**31 + 1) - 1)
        return st.integers(min_value=low, max_value=high)
    if annotation is float:
        return st.floats(min_value=limits.get("ge"), max_value=limits.get("le"), allow_nan=False, allow_infinity=False)
    if annotation is str:
        low = limits.get("min_len", 0)
        return st.text(
            alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)),
            min_size=low,
            max_size=max(low, min(limits.get("max_len", MAX_TEXT), MAX_TEXT)),
        )
    if annotation is Any:
        return st.recursive(
            st.none() | st.booleans() | st.integers() | TEXT,
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
            max_leaves=6,
        )
    raise NotImplementedError(f"no strategy for {annotation!r}")


def _field(info: FieldInfo) -> st.SearchStrategy[Any]:
    return for_annotation(info.annotation, list(info.metadata))


def valid_instances(model: type[BaseModel]) -> st.SearchStrategy[dict[str, Any]]:
    """Wire-shaped dicts (by alias) that ``model`` validates."""
    fields = {(info.alias or name): _field(info) for name, info in model.model_fields.items()}

    def accepted(data: dict[str, Any]) -> bool:
        try:
            model.model_validate(data)
        except ValidationError:
            return False
        return True

    return st.fixed_dictionaries(fields).filter(accepted)
