"""The one base of every API answer model: fields named in camelCase by alias (and settable by
their Python names), nothing unknown accepted. Every answer is validated against its model before
it leaves a handler, and the models make the OpenAPI document, so a field the code forgot to
declare fails a test instead of reaching a client. It sits on the layer's lowest floor, so every
domain's views use it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ResponseModel(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")
