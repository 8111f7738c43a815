"""Bad input: whatever a model answers (any text, any finish_reason, a refusal, a tool call with
any arguments), the engine returns a validated value or raises one of its typed errors
(docs/engine.md#errors), never another exception, in every strategy."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from lambda_agents.llm import (
    ChatResponse,
    RetryPolicy,
    Strategy,
    StructuredOptions,
    StructuredOutputError,
    ToolCall,
    Usage,
    generate_structured,
)
from pydantic import BaseModel, Field

from tests.support.branches import Branches

from .scripted_model import ScriptedModel


class Verdict(BaseModel):
    step: int = Field(ge=1, le=3)
    reason: str = Field(max_length=50)
    tags: list[str] = Field(min_length=2, max_length=2)


VALID = '{"step": 2, "reason": "ok", "tags": ["a", "b"]}'
JSONISH = st.one_of(
    st.text(max_size=80),
    st.text(alphabet=st.sampled_from(list('{}[]":,0123 stepreasontags`\n')), max_size=80),
    st.just(VALID),
    st.just('{"step": 2, "reason": "ok", "tags": ["a"]}'),
)
ANSWERS = st.builds(
    lambda content, finish, refusal, tool_args: ChatResponse(
        content,
        finish,
        refusal=refusal,
        tool_calls=() if tool_args is None else (ToolCall("c1", "StructuredOutput", tool_args),),
        usage=Usage(3, 2),
    ),
    st.one_of(st.none(), JSONISH),
    st.sampled_from(["stop", "length", "content_filter", "tool_calls", "function_call", "weird"]),
    st.one_of(st.none(), st.none(), st.text(max_size=20)),
    st.one_of(st.none(), JSONISH),
)
# Drawn answers are seldom valid for the tool strategy: half the answers are valid for every strategy.
VALID_ANSWERS = st.builds(
    lambda finish: ChatResponse(
        VALID, finish, tool_calls=(ToolCall("c1", "StructuredOutput", VALID),), usage=Usage(3, 2)
    ),
    st.sampled_from(["stop", "tool_calls"]),
)


def test_any_answer_gives_a_valid_value_or_a_typed_error() -> None:
    reached = Branches()

    @settings(max_examples=400, deadline=None)
    @given(st.lists(ANSWERS | VALID_ANSWERS, min_size=3, max_size=3), st.sampled_from(list(Strategy)))
    def example(answers: list[ChatResponse], strategy: Strategy) -> None:
        model = ScriptedModel(*answers)
        try:
            result = generate_structured(
                model,
                Verdict,
                [{"role": "user", "content": "judge"}],
                StructuredOptions(strategy=strategy, retry_policy=RetryPolicy(max_attempts=3), sleep=lambda _: None),
            )
        except StructuredOutputError as error:
            reached.add(f"{strategy} error")
            assert error.attempts and error.usage.total_tokens == 5 * len(error.attempts)
            return
        reached.add(f"{strategy} value")
        assert 1 <= result.value.step <= 3 and len(result.value.tags) == 2
        assert result.usage.total_tokens == 5 * len(result.attempts)

    example()
    reached.assert_all(*(f"{strategy} {outcome}" for strategy in Strategy for outcome in ("value", "error")))
