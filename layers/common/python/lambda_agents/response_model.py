"""The one base of every API answer model: fields named in camelCase by alias (made from the
Python name by ``to_camel``, so a view declares a field once; settable by the Python names),
nothing unknown accepted. Every answer is validated against its model before
it leaves a handler, and the models make the OpenAPI document, so a field the code forgot to
declare fails a test instead of reaching a client. It sits on the layer's lowest floor, so every
domain's views use it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class ResponseModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


ViewT = TypeVar("ViewT", bound=ResponseModel)


def views_of(view: type[ViewT], records: Iterable[object]) -> list[ViewT]:
    """Each record as a ``view``, read by attribute name. A listing's records (a job summary, an
    interview summary...) name their fields as their views do, which only add the camelCase
    aliases, so the copy is made here once instead of field by field in every view; a field the
    record lacks fails validation like any other answer that does not fit its model."""
    return [view.model_validate(record, from_attributes=True) for record in records]
