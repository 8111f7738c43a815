"""One chat turn (docs/chat-and-templates.md#one-chat-turn) on in-memory ports and a scripted model: the user's message
is stored before the call and the answer (fallback included) after it; the retry policy; what
refusal, content_filter, length and an empty answer do; the rate limit; audit records without
text."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from lambda_agents.chat import prompt
from lambda_agents.chat.answers import FALLBACK_CONTENT, FILTERED_CONTENT, REFUSAL_CONTENT
from lambda_agents.chat.audit import normalize_for_audit
from lambda_agents.chat.prompt import PromptBuilder
from lambda_agents.chat.records import MessageKind, SessionContext, SessionNotFound
from lambda_agents.llm import ChatRequest, ChatResponse, Deadline, Usage
from lambda_agents.llm.errors import ProviderTimeout, ProviderUnavailable, RateLimited, RequestRejected
from lambda_agents.llm.model_chain import ChainLink, ModelChain
from lambda_agents.llm.speeds import DEFAULT_PRIOR
from lambda_agents.spending import RateLimitExceeded

from tests.support.chat_turns import ChatTurns
from tests.support.memory_chat import InMemoryChatStore
from tests.unit.llm.scripted_model import ScriptedModel

from .answers import answer, fenced, payload
from .fakes import no_text_in

USER = "user-1"
MESSAGE = "エンジニアの中途採用の段取りを作りたいです"


def reply(
    text: str | None, *, finish: str = "stop", model: str = "gpt-4o-2024-08-06", refusal: str | None = None
) -> ChatResponse:
    return ChatResponse(text, finish, refusal=refusal, usage=Usage(1000, 200), model=model)


class ObservedModel(ScriptedModel):
    """A scripted model that notes what the store held when it was called; the engine plans its
    attempts at gpt-4o's typical pace."""

    def __init__(self, store: InMemoryChatStore, *steps: Any) -> None:
        super().__init__(*steps, speed=DEFAULT_PRIOR)
        self.store = store
        self.seen: list[list[str]] = []

    def complete(self, request: ChatRequest) -> ChatResponse:
        self.seen.append(list(self.store.events))
        return super().complete(request)


class Harness(ChatTurns):
    def __init__(self, *steps: Any, salt: str | None = None, limit: int = 1000) -> None:
        store = InMemoryChatStore()
        goal = SessionContext(processType="中途採用", goal="4月入社")
        super().__init__(ObservedModel(store, *steps), store=store, salt=salt, limit=limit, context=goal)

    def send(self, message: str = MESSAGE, deadline: Deadline | None = None, **how: Any) -> Any:
        return super().send(message, deadline, **how)


def test_given_a_valid_answer_then_the_user_message_is_stored_before_the_call_and_the_answer_after() -> None:
    h = Harness(reply(answer()))
    result = h.send()
    assert h.model.seen == [["session", "user:1"]]
    assert h.store.events == ["session", "user:1", "assistant:2"]
    assert [(m.seq, m.role, m.kind) for m in h.stored] == [(1, "user", "message"), (2, "assistant", "answer")]
    body = result.as_response()
    assert body["aiResponse"]["content"].endswith("```")
    assert body["aiResponse"]["templateDraft"]["ok"] is True and body["aiResponse"]["fallback"] is False
    assert [m["seq"] for m in body["conversation"]] == [1, 2]
    usage = {"tokens": 1200, "promptTokens": 1000, "completionTokens": 200, "cachedTokens": 0, "costUsd": 0.0045}
    assert {key: body["usage"][key] for key in usage} == usage
    # The answer's record: the model that answered, the chat's prompt version, tokens and cost.
    assert body["usage"]["account"] == {
        "model": "gpt-4o-2024-08-06",
        "promptVersion": PromptBuilder().prompt_version,
        "promptTokens": 1000,
        "cachedTokens": 0,
        "completionTokens": 200,
        "billing": "standard",
        "costUsd": 0.0045,
        "attempts": 1,
    }
    assert h.store.audits[0].account == body["usage"]["account"]  # stored with the answer
    assert h.store.drafts[h.session.session_id][0].payload == payload()


def test_given_a_message_then_the_call_uses_the_spec_parameters_and_ends_with_the_users_message() -> None:
    h = Harness(reply(answer()))
    h.send()
    (request,) = h.model.requests
    assert (request.temperature, request.max_tokens, request.purpose, request.hints.language) == (
        0.3,
        1200,
        "chat.reply",
        "ja",
    )
    assert request.messages[0]["role"] == "system" and "中途採用" in request.messages[0]["content"]
    assert request.messages[-1] == {"role": "user", "content": MESSAGE}


def test_given_invalid_json_then_the_answer_keeps_its_prose_without_json_and_no_draft_is_stored() -> None:
    h = Harness(reply("工程案です。\n" + fenced('{"schema": "ai_chat_process_template.v1", "answer": ')))
    result = h.send()
    ai = result.as_response()["aiResponse"]
    assert ai["content"] == "工程案です。" and ai["kind"] == "answer"
    assert ai["templateDraft"]["ok"] is False and ai["templateDraft"]["errorClass"] == "JsonParseError"
    assert ai["templateDraft"]["errorCode"] == "InvalidStructuredJson"
    assert h.session.session_id not in h.store.drafts
    assert h.store.audits[0].parse_error_class == "JsonParseError"


@pytest.mark.parametrize(
    ("failures", "code", "kind"),
    [
        ([RateLimited("429"), RateLimited("429")], "RateLimited", "rate_limit"),
        ([ProviderTimeout("t"), ProviderTimeout("t")], "Timeout", "timeout"),
        ([ProviderUnavailable("500"), ProviderUnavailable("502")], "OpenAIUnavailable", "server_error"),
    ],
)
def test_given_the_provider_failing_twice_then_fallback_d_is_stored_after_one_retry_at_1_5_s(
    failures: list[Exception], code: str, kind: str
) -> None:
    h = Harness(*failures)
    result = h.send()
    assert h.clock.sleeps == [1.5]
    body = result.as_response()
    assert body["aiResponse"]["content"] == FALLBACK_CONTENT
    assert (body["aiResponse"]["fallback"], body["aiResponse"]["errorCode"]) == (True, code)
    assert body["aiResponse"]["templateDraft"] is None and "```" not in body["aiResponse"]["content"]
    usage = {"tokens": 0, "promptTokens": 0, "completionTokens": 0, "cachedTokens": 0, "costUsd": None}
    assert {key: body["usage"][key] for key in usage} == usage
    assert (body["usage"]["account"]["attempts"], body["usage"]["account"]["costUsd"]) == (2, 0.0)
    assert [m.kind for m in h.stored] == [MessageKind.MESSAGE, MessageKind.FALLBACK]
    (audit,) = h.store.audits
    assert (audit.error_type, audit.retry_count, audit.duration_ms) == (kind, 1, 1500)
    h.model.assert_consumed()


def test_given_two_streams_cut_after_500_tokens_then_the_fallback_records_what_both_were_billed() -> None:
    """A stall cut each attempt after ~500 tokens: the provider billed both (the adapter counts a
    cut stream's tokens from what arrived, ``Usage.estimated``), so the fallback answer says so."""
    first = ChatResponse("途中まで", "cut", usage=Usage(900, 500, estimated=True))
    second = ChatResponse("途中まで", "cut", usage=Usage(900, 480, estimated=True))
    h = Harness(ProviderTimeout("stalled", first), ProviderTimeout("stalled", second))

    body = h.send().as_response()

    assert body["aiResponse"]["fallback"] is True
    assert body["usage"]["promptTokens"] == 1800 and body["usage"]["completionTokens"] == 980
    (audit,) = h.store.audits
    assert (audit.prompt_tokens, audit.completion_tokens) == (1800, 980)


def test_given_one_429_then_the_retry_answers() -> None:
    h = Harness(RateLimited("429", retry_after_s=0.5), reply(answer()))
    result = h.send()
    assert h.clock.sleeps == [1.5]
    assert not result.fallback and h.store.audits[0].retry_count == 1


def test_given_a_long_retry_after_then_the_wait_is_capped_for_a_waiting_person() -> None:
    h = Harness(RateLimited("429", retry_after_s=60), reply(answer()))
    h.send()
    assert h.clock.sleeps == [5.0]


def test_given_a_rejected_request_then_there_is_no_retry_and_the_fallback_is_stored() -> None:
    h = Harness(RequestRejected("400 context too long"))
    result = h.send()
    assert h.clock.sleeps == [] and result.error_code == "OpenAIUnavailable"
    assert h.store.audits[0].error_type == "rejected"


def test_given_too_little_time_left_then_the_fallback_is_stored_without_calling_the_model() -> None:
    h = Harness()
    result = h.send(deadline=Deadline.after(1.0, h.clock))
    assert h.model.requests == [] and result.error_code == "Timeout"
    assert h.store.audits[0].error_type == "deadline" and [m.kind for m in h.stored][-1] == MessageKind.FALLBACK


def test_given_an_adapter_bug_then_the_turn_is_not_lost() -> None:
    class Broken(ScriptedModel):
        def complete(self, request: ChatRequest) -> ChatResponse:
            raise KeyError("choices")

    h = Harness()
    h.use_case.answering.conversation.model = Broken()
    result = h.send()
    assert result.fallback and h.store.audits[0].error_type == "KeyError"


@pytest.mark.parametrize(
    ("response", "content", "kind"),
    [
        (reply(None, refusal="I can't help with that."), REFUSAL_CONTENT, MessageKind.REFUSAL),
        (reply("途中まで書いた危ない文", finish="content_filter"), FILTERED_CONTENT, MessageKind.FILTERED),
        (reply(""), FALLBACK_CONTENT, MessageKind.FALLBACK),
        (reply("   \n"), FALLBACK_CONTENT, MessageKind.FALLBACK),
    ],
    ids=["refusal", "content_filter", "empty", "blank"],
)
def test_given_no_usable_answer_then_a_fixed_japanese_text_is_stored_with_the_billed_tokens(
    response: ChatResponse, content: str, kind: MessageKind
) -> None:
    h = Harness(response)
    result = h.send()
    body = result.as_response()
    assert body["aiResponse"]["content"] == content and body["aiResponse"]["kind"] == kind.value
    assert body["usage"]["tokens"] == 1200 and body["aiResponse"]["templateDraft"] is None
    assert h.stored[-1].kind == kind and h.store.audits[0].outcome == kind.value


def test_given_a_truncated_answer_then_it_is_marked_and_its_broken_fence_is_stripped() -> None:
    cut = answer()[:200]
    h = Harness(reply(cut, finish="length"))
    body = h.send().as_response()["aiResponse"]
    assert body["truncated"] is True and body["kind"] == "answer"
    assert body["templateDraft"]["errorClass"] == "JsonParseError" and "```" not in body["content"]
    assert h.store.audits[0].finish_reason == "length"


def test_given_the_rate_limit_is_reached_then_nothing_is_stored_and_the_model_is_not_called() -> None:
    h = Harness(reply(answer()), limit=1)
    h.send()
    with pytest.raises(RateLimitExceeded) as raised:
        h.send()
    assert raised.value.retry_after_s == 42.0
    assert len(h.stored) == 2 and len(h.model.requests) == 1


def test_given_another_users_session_then_it_is_not_found_and_nothing_is_stored() -> None:
    h = Harness()
    with pytest.raises(SessionNotFound):
        h.send(user="someone-else")
    assert h.stored == [] and h.limiter.calls == 0


def test_given_earlier_turns_then_history_holds_what_was_said_not_the_fixed_fallback_texts() -> None:
    h = Harness(reply(answer()))
    h.store.add_history(
        h.session.session_id,
        ("user", "最初の質問", MessageKind.MESSAGE),
        ("assistant", "最初の回答", MessageKind.ANSWER),
        ("user", "二つ目の質問", MessageKind.MESSAGE),
        ("assistant", FALLBACK_CONTENT, MessageKind.FALLBACK),
    )
    h.send()
    sent = [(m["role"], m["content"]) for m in h.model.requests[0].messages[1:]]
    assert sent == [
        ("user", "最初の質問"),
        ("assistant", "最初の回答"),
        ("user", "二つ目の質問"),
        ("user", MESSAGE),
    ]


def test_given_a_long_conversation_then_only_the_window_of_12_is_sent() -> None:
    h = Harness(reply(answer()))
    turns = [
        ("user" if i % 2 == 0 else "assistant", f"m{i}", MessageKind.MESSAGE if i % 2 == 0 else MessageKind.ANSWER)
        for i in range(30)
    ]
    h.store.add_history(h.session.session_id, *turns)  # type: ignore[arg-type]
    h.send()
    history = h.model.requests[0].messages[1:-1]
    assert [m["content"] for m in history] == [f"m{i}" for i in range(18, 30)]


def test_given_a_salt_then_the_audit_hash_covers_the_exchange_and_no_record_holds_text() -> None:
    h = Harness(reply(answer()), salt="pepper")
    result = h.send()
    audit = h.store.audits[0].as_dict()
    exchange = normalize_for_audit([("user", MESSAGE), ("assistant", result.assistant.content)])
    assert audit["exchangeHash"] == hashlib.sha256(("pepper" + exchange).encode()).hexdigest()
    assert audit["hashAlgorithm"] == "sha256"
    assert no_text_in(audit, MESSAGE, result.assistant.content, "工程", "中途採用")


def test_given_no_salt_then_hashing_is_disabled() -> None:
    h = Harness(reply(answer()))
    h.send()
    audit = h.store.audits[0].as_dict()
    assert audit["exchangeHash"] is None and audit["hashAlgorithm"] is None


def test_given_a_model_outside_the_price_table_then_no_cost_is_reported() -> None:
    h = Harness(reply(answer(), model="my-local-llama"))
    assert h.send().as_response()["usage"]["costUsd"] is None


def test_given_two_turns_then_the_conversation_is_returned_in_order() -> None:
    h = Harness(reply(answer()), reply(answer(payload(steps=2))))
    h.send("一つ目")
    body = h.send("二つ目").as_response()
    assert [(m["seq"], m["role"]) for m in body["conversation"]] == [
        (1, "user"),
        (2, "assistant"),
        (3, "user"),
        (4, "assistant"),
    ]
    assert body["aiResponse"]["replyTo"] == 3
    assert json.loads(body["aiResponse"]["content"].split("```json\n")[1].split("\n```")[0])["process_template_draft"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("採用工程を整理しました。", True),
        ("Here is the process for your AWS and SaaS hiring, step by step. 以上です", False),
        ("AWSの設定とCI/CDの手順をまとめました。", True),
        ("Here is the plan.", False),
    ],
)
def test_given_an_answer_then_the_audit_records_whether_its_prose_is_japanese_policy_g(
    text: str, expected: bool
) -> None:
    h = Harness(reply(text + "\n" + fenced(json.dumps(payload(), ensure_ascii=False))))
    h.send()
    assert h.store.audits[0].answer_in_japanese is expected
    assert h.store.audits[0].as_dict()["answerInJapanese"] is expected


def test_given_the_fallback_then_the_language_check_does_not_apply() -> None:
    h = Harness(ProviderUnavailable("500"), ProviderUnavailable("500"))
    h.send()
    assert h.store.audits[0].answer_in_japanese is None


def test_given_cut_streams_on_the_first_model_and_429s_on_the_second_then_the_fallback_records_the_cut_tokens() -> None:
    """Each cut call was billed its prompt and the ~500 tokens it streamed (the adapter counts them
    when the provider sends no usage); the chain used to drop them when the next link failed too."""
    cut_usage = Usage(1000, 500, estimated=True)

    def cut() -> ProviderTimeout:
        return ProviderTimeout("stalled", ChatResponse("途中", "cut", usage=cut_usage, model="gpt-4o-2024-08-06"))

    chain = ModelChain(
        [
            ChainLink(ScriptedModel(cut(), cut(), speed=DEFAULT_PRIOR, name="gpt-4o-2024-08-06")),
            ChainLink(ScriptedModel(RateLimited("429"), RateLimited("429"), speed=DEFAULT_PRIOR, name="gpt-4o-mini")),
        ]
    )
    h = ChatTurns(chain)

    result = h.send(MESSAGE)

    body = result.as_response()
    assert body["aiResponse"]["fallback"] is True
    assert (body["usage"]["promptTokens"], body["usage"]["completionTokens"]) == (2000, 1000)
    assert body["usage"]["costUsd"] == pytest.approx(2 * (1000 * 2.5 + 500 * 10.0) / 1_000_000)
    (audit,) = h.store.audits
    assert (audit.prompt_tokens, audit.completion_tokens) == (2000, 1000)
    assert audit.account is not None and audit.account["attempts"] == 2 and audit.account["costUsd"] > 0


def test_the_chat_prompt_version_is_stable_and_changes_with_the_instructions() -> None:
    assert PromptBuilder().prompt_version == PromptBuilder().prompt_version
    original = prompt.INSTRUCTIONS["ja"]
    prompt._prompt_version.cache_clear()
    try:
        prompt.INSTRUCTIONS["ja"] = original + "\n- 箇条書きで答えてください。"
        changed = PromptBuilder().prompt_version
    finally:
        prompt.INSTRUCTIONS["ja"] = original
        prompt._prompt_version.cache_clear()
    assert changed != PromptBuilder().prompt_version
