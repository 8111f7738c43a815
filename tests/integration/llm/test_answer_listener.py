"""Spec: a request's listener hears the answer as the model writes it (llm/types.py
``AnswerListener``), through the real openai client and the fake server streaming it in pieces:
text pieces in order, tool-call argument pieces with their call's index and name, a new attempt
announced before its words (a retry restarts at the beginning), a whole answer told once when the
server does not stream, and a listener that fails is dropped without touching the answer."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from lambda_agents.llm import ChatRequest, RetryPolicy, complete_with_retries
from lambda_agents.llm.openai_model import OpenAIChatModel, OpenAIModelSettings
from lambda_agents.llm.policy import TRANSIENT_KINDS
from lambda_agents.llm.types import HeardAnswer, RequestParameters, ToolDefinition

from devtools.fake_openai import FakeOpenAIServer, Reply

pytestmark = pytest.mark.integration

ANSWER = "Breathe in slowly, hold it, and let it go. " * 20
RETRIES = RetryPolicy(max_attempts=3, backoff_base_s=0.01, retry_on=TRANSIENT_KINDS)


@dataclass
class Heard:
    """What a listener heard, one list of text pieces per attempt."""

    attempts: list[list[str]] = field(default_factory=list)
    tool_pieces: list[tuple[int, str, str]] = field(default_factory=list)

    def attempt_started(self) -> None:
        self.attempts.append([])

    def text(self, piece: str) -> None:
        self.attempts[-1].append(piece)

    def tool_arguments(self, index: int, name: str, piece: str) -> None:
        self.tool_pieces.append((index, name, piece))


@dataclass
class Failing(Heard):
    def text(self, piece: str) -> None:
        super().text(piece)
        raise RuntimeError("a listener bug")


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(time_scale=0.001) as running:
        yield running
        running.assert_script_consumed()


def model_for(server: FakeOpenAIServer, *, stream: bool = True) -> OpenAIChatModel:
    return OpenAIChatModel(OpenAIModelSettings(api_key="k", model="gpt-4o", base_url=server.base_url, stream=stream))


def request(listener: object, **changes: object) -> ChatRequest:
    return ChatRequest(
        messages=[{"role": "user", "content": "Write about breathing"}],
        max_tokens=1200,
        purpose="test.listener",
        listener=listener,  # type: ignore[arg-type]
        **changes,  # type: ignore[arg-type]
    )


def test_the_answers_text_is_heard_piece_by_piece_in_order_as_it_streams(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(content=ANSWER, tokens_per_s=60.0))
    heard = Heard()
    result = complete_with_retries(model_for(server), request(heard))
    assert len(heard.attempts) == 1
    assert len(heard.attempts[0]) > 1  # pieces as the chunks came (a busy machine merges chunks), not the text once
    assert "".join(heard.attempts[0]) == result.response.content == ANSWER


def test_a_retry_is_announced_before_its_words_so_they_restart_at_the_beginning(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(content=ANSWER, drop_after_tokens=40), Reply(content=ANSWER))
    heard = Heard()
    result = complete_with_retries(model_for(server), request(heard), retry_policy=RETRIES)
    assert [a.outcome for a in result.attempts] == ["connection", "ok"]
    assert len(heard.attempts) == 2
    dropped, answered = ("".join(pieces) for pieces in heard.attempts)
    assert dropped and ANSWER.startswith(dropped) and dropped != ANSWER
    assert answered == ANSWER


def test_a_tool_calls_arguments_are_heard_piece_by_piece_with_its_index_and_name(server: FakeOpenAIServer) -> None:
    arguments = '{"message": "' + "What brought you here today? " * 10 + '"}'
    server.enqueue(Reply(tool_name="ask", tool_arguments=arguments))
    tool = ToolDefinition("ask", "Ask the applicant", {"type": "object", "properties": {"message": {"type": "string"}}})
    heard = Heard()
    parameters = RequestParameters(tools=(tool,), tool_choice="ask")
    result = complete_with_retries(model_for(server), request(heard, parameters=parameters))
    assert result.response.tool_calls[0].arguments == arguments
    assert len(heard.tool_pieces) > 10
    assert {(index, name) for index, name, _ in heard.tool_pieces} == {(0, "ask")}
    assert "".join(piece for _, _, piece in heard.tool_pieces) == arguments


def test_a_server_that_cannot_stream_is_heard_once_with_the_whole_answer(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(content=ANSWER))
    heard = Heard()
    complete_with_retries(model_for(server, stream=False), request(heard))
    assert heard.attempts == [[ANSWER]]


def test_a_failing_listener_is_dropped_and_the_answer_comes_whole(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(content=ANSWER, tokens_per_s=60.0))
    heard = Failing()
    result = complete_with_retries(model_for(server), request(heard))
    assert result.response.content == ANSWER and result.response.finish_reason == "stop"
    assert heard.attempts == [[heard.attempts[0][0]]]  # heard its first piece, then never again


def test_the_listener_is_kept_as_one_heard_answer_through_every_copy_of_the_request() -> None:
    original = request(Heard())
    copied = ChatRequest(**{**original.__dict__, "max_tokens": 10})
    assert isinstance(original.listener, HeardAnswer) and copied.listener is original.listener
