"""The llm package loads its names on first use; each must still be the submodule's own object."""

from __future__ import annotations

import importlib

import pytest
from lambda_agents import llm


def test_the_package_exports_exactly_the_names_it_knows_where_to_find() -> None:
    assert sorted(llm.__all__) == sorted(llm._SUBMODULE_OF)


@pytest.mark.parametrize("name", sorted(llm._SUBMODULE_OF))
def test_given_an_exported_name_when_read_from_the_package_then_it_is_the_submodules_object(name: str) -> None:
    submodule = importlib.import_module(f"lambda_agents.llm.{llm._SUBMODULE_OF[name]}")
    assert getattr(llm, name) is getattr(submodule, name)


def test_given_an_unknown_name_when_read_from_the_package_then_attribute_error_names_it() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = llm.no_such_name  # type: ignore[attr-defined]
