"""Spec: the provider-neutral request in OpenAI's words. Only the openai adapter knows
``response_format``, ``tools`` and ``tool_choice``; every other module speaks tool definitions, a
JSON output and a tool choice by name."""

from __future__ import annotations

from lambda_agents.llm import ChatRequest, JsonOutput, RequestParameters, ToolDefinition
from lambda_agents.llm.openai_model import openai_arguments

SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": False}
MESSAGES = [{"role": "user", "content": "hi"}]


def test_given_a_json_output_then_it_goes_out_as_a_strict_json_schema_response_format() -> None:
    request = ChatRequest(
        messages=MESSAGES,
        max_tokens=300,
        temperature=0.0,
        parameters=RequestParameters(json_output=JsonOutput("Plan", SCHEMA)),
    )
    arguments = openai_arguments(request, "gpt-4o", "max_completion_tokens")
    assert arguments == {
        "model": "gpt-4o",
        "messages": MESSAGES,
        "max_completion_tokens": 300,
        "temperature": 0.0,
        "response_format": {"type": "json_schema", "json_schema": {"name": "Plan", "strict": True, "schema": SCHEMA}},
    }


def test_given_tools_and_a_named_choice_then_they_are_function_tools_and_a_forced_function() -> None:
    request = ChatRequest(
        messages=MESSAGES,
        max_tokens=100,
        parameters=RequestParameters(
            tools=(ToolDefinition("ask", "Ask the applicant", SCHEMA),), tool_choice="ask", parallel_tool_calls=False
        ),
    )
    arguments = openai_arguments(request, "gpt-4o", "max_tokens")
    assert arguments["max_tokens"] == 100 and "max_completion_tokens" not in arguments
    assert arguments["tools"] == [
        {
            "type": "function",
            "function": {"name": "ask", "description": "Ask the applicant", "parameters": SCHEMA, "strict": True},
        }
    ]
    assert arguments["tool_choice"] == {"type": "function", "function": {"name": "ask"}}
    assert arguments["parallel_tool_calls"] is False


def test_given_a_mode_as_the_choice_then_it_goes_out_as_that_word() -> None:
    for mode in ("auto", "required", "none"):
        request = ChatRequest(
            messages=MESSAGES,
            max_tokens=10,
            parameters=RequestParameters(tools=(ToolDefinition("t", "", SCHEMA),), tool_choice=mode),
        )
        assert openai_arguments(request, "m", "max_completion_tokens")["tool_choice"] == mode


def test_given_plain_text_then_no_schema_tool_or_choice_is_sent() -> None:
    arguments = openai_arguments(ChatRequest(messages=MESSAGES, max_tokens=10), "m", "max_completion_tokens")
    assert set(arguments) == {"model", "messages", "max_completion_tokens"}


def test_given_the_flex_tier_then_it_goes_out_as_service_tier_and_no_tier_sends_nothing() -> None:
    flex = ChatRequest(messages=MESSAGES, max_tokens=10, parameters=RequestParameters(service_tier="flex"))
    assert openai_arguments(flex, "o4-mini", "max_completion_tokens")["service_tier"] == "flex"
    plain = ChatRequest(messages=MESSAGES, max_tokens=10)
    assert "service_tier" not in openai_arguments(plain, "o4-mini", "max_completion_tokens")
