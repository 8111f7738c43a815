"""docs/engine.md#tool-arguments: every tool call's arguments go through parse_and_validate_tool_args, which answers a
validated input or an error message for the model, and never raises."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from lambda_agents.interview.agents.tool_calls import (
    MAX_ARGUMENT_CHARS,
    FunctionCallResult,
    InvalidToolArgs,
    ValidToolArgs,
    parse_and_validate_tool_args,
)
from lambda_agents.interview.agents.tool_inputs import AskInput, CreatePlanInput, SetTimezoneInput, SubtaskInput
from pydantic import BaseModel

from tests.support.branches import Branches
from tests.support.model_strategies import valid_instances

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=15,
)
INPUT_MODELS: st.SearchStrategy[type[BaseModel]] = st.sampled_from(
    [AskInput, SetTimezoneInput, SubtaskInput, CreatePlanInput]
)


@st.composite
def arguments_for_a_model(
    draw: st.DrawFn, noise: st.SearchStrategy[object], *, as_text: bool = False
) -> tuple[object, type[BaseModel]]:
    """An input model and arguments for it: noise half of the time, else the model's own valid arguments
    (JSON text when ``as_text``), since noise alone (any text, any JSON value) is never a valid input."""
    model = draw(INPUT_MODELS)
    valid = valid_instances(model)
    return draw(st.one_of(noise, valid.map(json.dumps) if as_text else valid)), model


def test_given_valid_json_arguments_when_parsed_then_the_typed_input_is_returned() -> None:
    parsed = parse_and_validate_tool_args('{"message": "  お名前を教えてください。 "}', AskInput, "ask")
    assert isinstance(parsed, ValidToolArgs)
    assert parsed.data.message == "お名前を教えてください。"


def test_given_malformed_json_when_parsed_then_the_error_names_the_tool_and_says_json() -> None:
    parsed = parse_and_validate_tool_args('{"message": "hi"', AskInput, "ask")
    assert isinstance(parsed, InvalidToolArgs)
    assert parsed.error.startswith("Invalid JSON for ask:")


def test_given_a_json_array_when_parsed_then_an_object_is_asked_for() -> None:
    parsed = parse_and_validate_tool_args("[1, 2]", AskInput, "ask")
    assert isinstance(parsed, InvalidToolArgs)
    assert "expected an object, got list" in parsed.error


def test_given_a_missing_or_unknown_parameter_when_parsed_then_each_is_named() -> None:
    parsed = parse_and_validate_tool_args('{"text": "hi"}', AskInput, "ask")
    assert isinstance(parsed, InvalidToolArgs)
    assert parsed.error.startswith("Invalid parameters for ask:")
    assert "message: Field required" in parsed.error
    assert "text: Extra inputs are not permitted" in parsed.error


def test_given_a_nullable_parameter_omitted_when_parsed_then_it_is_an_error_not_a_default() -> None:
    """Nullable, never optional (docs/engine.md#ai-input-schemas): the model must send null explicitly."""
    assert isinstance(parse_and_validate_tool_args("{}", SetTimezoneInput, "set_timezone"), InvalidToolArgs)
    parsed = parse_and_validate_tool_args('{"timezone": null}', SetTimezoneInput, "set_timezone")
    assert isinstance(parsed, ValidToolArgs) and parsed.data.timezone is None


def test_given_subtask_reviewer_without_facts_then_the_rule_is_named() -> None:
    parsed = parse_and_validate_tool_args(json.dumps({"agent": "reviewer", "facts": None}), SubtaskInput, "subtask")
    assert isinstance(parsed, InvalidToolArgs)
    assert "facts is required when agent is reviewer" in parsed.error


def test_quick_check_is_no_subtask_choice_any_more() -> None:
    raw = json.dumps({"agent": "quick_check", "facts": None})
    parsed = parse_and_validate_tool_args(raw, SubtaskInput, "subtask")
    assert isinstance(parsed, InvalidToolArgs)
    assert "Input should be 'reviewer' or 'auditor'" in parsed.error


def test_given_oversized_arguments_when_parsed_then_they_are_refused_unread() -> None:
    parsed = parse_and_validate_tool_args('{"message": "' + "x" * MAX_ARGUMENT_CHARS + '"}', AskInput, "ask")
    assert isinstance(parsed, InvalidToolArgs)
    assert "longer than" in parsed.error


def test_given_deeply_nested_json_when_parsed_then_it_is_an_error_not_a_crash() -> None:
    parsed = parse_and_validate_tool_args("[" * 100_000 + "]" * 100_000, AskInput, "ask")
    assert isinstance(parsed, InvalidToolArgs)


def test_given_a_result_when_sent_to_the_model_then_only_status_and_message_go() -> None:
    """Minimal tool results (docs/engine.md#tool-results); data for the caller stays out of the model's view."""

    class WithData(FunctionCallResult):
        pass

    result = WithData.success("saved")
    assert json.loads(result.for_model()) == {"status": "success", "result": {"message": "saved"}}


def test_property_any_text_gives_a_valid_input_or_an_error_message_never_an_exception() -> None:
    reached = Branches()

    # JSON text among the noise: text alone is seldom a JSON object, so seldom "Invalid parameters".
    @settings(max_examples=300, deadline=None)
    @given(arguments_for_a_model(st.one_of(st.text(max_size=300), JSON_VALUES.map(json.dumps)), as_text=True))
    def example(case: tuple[object, type[BaseModel]]) -> None:
        raw, model = case
        parsed = parse_and_validate_tool_args(raw, model, "tool")
        assert isinstance(parsed, (ValidToolArgs, InvalidToolArgs))
        if isinstance(parsed, InvalidToolArgs):
            assert parsed.error.startswith(("Invalid JSON for tool", "Invalid parameters for tool"))
            reached.add("invalid JSON" if parsed.error.startswith("Invalid JSON") else "invalid parameters")
        else:
            reached.add("valid")

    example()
    reached.assert_all("valid", "invalid JSON", "invalid parameters")


def test_property_any_json_value_gives_a_valid_input_or_an_error_message() -> None:
    reached = Branches()

    @settings(max_examples=300, deadline=None)
    @given(arguments_for_a_model(JSON_VALUES))
    def example(case: tuple[object, type[BaseModel]]) -> None:
        value, model = case
        for raw in (json.dumps(value), value):
            parsed = parse_and_validate_tool_args(raw, model, "tool")
            assert isinstance(parsed, (ValidToolArgs, InvalidToolArgs))
            if isinstance(parsed, ValidToolArgs):
                reached.add("valid")
                assert isinstance(parsed.data, model)
            else:
                reached.add("invalid")

    example()
    reached.assert_all("valid", "invalid")


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=200).filter(lambda text: text.strip()))
def test_property_a_valid_ask_round_trips_its_trimmed_message(message: str) -> None:
    parsed = parse_and_validate_tool_args(json.dumps({"message": message}), AskInput, "ask")
    assert isinstance(parsed, ValidToolArgs)
    assert parsed.data.message.strip() == message.strip()
