"""One wording for what a ValidationError found: the field's path and pydantic's message."""

from __future__ import annotations

import pytest
from lambda_agents.validation_errors import describe_errors, summarise_errors
from pydantic import BaseModel, Field, RootModel, ValidationError


class Item(BaseModel):
    name: str = Field(min_length=1)
    count: int


def _error(model: type[BaseModel], value: object) -> ValidationError:
    with pytest.raises(ValidationError) as raised:
        model.model_validate(value)
    return raised.value


def test_each_problem_is_its_location_and_message() -> None:
    error = _error(Item, {"name": "", "count": "x"})
    assert describe_errors(error) == [
        "name: String should have at least 1 character",
        "count: Input should be a valid integer, unable to parse string as an integer",
    ]


def test_a_root_problem_is_the_message_alone_or_named_by_root() -> None:
    error = _error(RootModel[int], "x")
    assert describe_errors(error) == ["Input should be a valid integer, unable to parse string as an integer"]
    assert describe_errors(error, root="<root>")[0].startswith("<root>: ")


def test_a_summary_says_how_many_problems_it_left_out() -> None:
    error = _error(Item, {"name": "", "count": "x"})
    assert summarise_errors(error, limit=1) == "name: String should have at least 1 character; and 1 more"
