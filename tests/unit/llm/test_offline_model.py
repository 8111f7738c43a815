"""Spec: the offline model (docs/engine.md#offline-model), deterministic, writes valid, meaningful content."""

from __future__ import annotations

from typing import Literal

from lambda_agents.llm import ChatRequest, StructuredOptions, generate_structured
from lambda_agents.llm.offline_model import OfflineModel, detect_language, sample
from lambda_agents.llm.schema import model_schema
from lambda_agents.llm.types import AnswerHints, RequestParameters, ToolDefinition
from pydantic import BaseModel, Field, create_model


class Slot(BaseModel):
    slot_index: int = Field(json_schema_extra={"x-index": True})
    hook: str = Field(
        max_length=12, json_schema_extra={"x-examples": {"ja": ["今夜は休もう"], "en": ["Rest tonight now"]}}
    )
    tone: Literal["gentle", "firm", "playful"]
    caption: str = Field(min_length=30)
    score: int = Field(ge=3, le=5)
    note: str | None = None


def _plan(count: int) -> type[BaseModel]:
    return create_model("Plan", slots=(list[Slot], Field(min_length=count, max_length=count)))


def test_given_a_run_time_array_length_when_answered_offline_then_the_length_and_limits_hold() -> None:
    for count in (1, 6, 15):
        result = generate_structured(OfflineModel(), _plan(count), [{"role": "user", "content": "plan"}])
        slots = result.value.slots  # type: ignore[attr-defined]
        assert len(slots) == count
        assert [slot.slot_index for slot in slots] == list(range(count))
        assert all(len(slot.hook) <= 12 and len(slot.caption) >= 30 and 3 <= slot.score <= 5 for slot in slots)
        assert {slot.tone for slot in slots} <= {"gentle", "firm", "playful"}


def test_given_enums_when_sampled_then_items_cycle_through_the_values() -> None:
    value = sample(model_schema(_plan(3)))
    assert [slot["tone"] for slot in value["slots"]] == ["gentle", "firm", "playful"]


def test_given_a_language_when_answered_then_examples_and_labels_are_in_that_language() -> None:
    model = OfflineModel()
    ja = generate_structured(
        model, _plan(2), [{"role": "user", "content": "x"}], StructuredOptions(language="ja")
    ).value
    en = generate_structured(
        model, _plan(2), [{"role": "user", "content": "x"}], StructuredOptions(language="en")
    ).value
    assert ja.slots[0].hook == "今夜は休もう"  # type: ignore[attr-defined]
    assert en.slots[0].hook == "Rest tonight"  # type: ignore[attr-defined]  (cut to maxLength 12)
    assert "案" in ja.slots[0].caption  # type: ignore[attr-defined]


def test_without_a_language_the_latest_user_message_decides() -> None:
    assert detect_language([{"role": "user", "content": "hello"}, {"role": "user", "content": "夜更かし"}]) == "ja"
    assert detect_language([{"role": "user", "content": "夜更かし"}, {"role": "user", "content": "hello"}]) == "en"


def test_the_same_request_gets_the_same_answer_and_every_call_is_recorded() -> None:
    model = OfflineModel()
    first = generate_structured(model, _plan(4), [{"role": "user", "content": "x"}]).raw
    second = generate_structured(model, _plan(4), [{"role": "user", "content": "x"}]).raw
    assert first == second
    assert len(model.calls) == 2 and model.calls[0].purpose == "structured"


def test_free_text_purposes_are_answered_by_their_registered_responder() -> None:
    model = OfflineModel()
    model.register("reply", lambda request: f"echo {len(request.messages)}")
    answer = model.complete(ChatRequest(messages=[{"role": "user", "content": "hi"}], max_tokens=50, purpose="reply"))
    assert answer.content == "echo 1"
    plain = model.complete(ChatRequest(messages=[{"role": "user", "content": "やあ"}], max_tokens=50, purpose="other"))
    assert plain.content == "承知しました。"
    assert answer.usage.total_tokens > 0


class _Listener:
    def __init__(self) -> None:
        self.heard: list[tuple[str, ...]] = []

    def attempt_started(self) -> None:
        self.heard.append(("attempt",))

    def text(self, piece: str) -> None:
        self.heard.append(("text", piece))

    def tool_arguments(self, index: int, name: str, piece: str) -> None:
        self.heard.append(("tool", str(index), name, piece))


def test_given_a_listener_when_answered_offline_then_it_hears_the_whole_answer_once_without_invented_pacing() -> None:
    listener = _Listener()
    model = OfflineModel({"chat.reply": lambda _: "Here is the whole answer."})
    request = ChatRequest(messages=[{"role": "user", "content": "hi"}], max_tokens=50, purpose="chat.reply")
    model.complete(ChatRequest(**{**request.__dict__, "listener": listener}))
    assert listener.heard == [("attempt",), ("text", "Here is the whole answer.")]


def test_given_a_listener_when_a_structured_tool_call_is_answered_offline_then_its_arguments_are_heard_once() -> None:
    listener = _Listener()
    request = ChatRequest(
        messages=[{"role": "user", "content": "plan"}],
        max_tokens=500,
        parameters=RequestParameters(tools=(ToolDefinition("StructuredOutput", "", {}),)),
        hints=AnswerHints(output_schema=model_schema(_plan(1))),
        listener=listener,
    )
    response = OfflineModel().complete(request)
    assert listener.heard == [("attempt",), ("tool", "0", "StructuredOutput", response.tool_calls[0].arguments)]
