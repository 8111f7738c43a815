"""TemplateDraftMapper (docs/chat-and-templates.md#the-template-draft-mapper), the offline chat answer of mock mode
(docs/chat-and-templates.md#mock-and-openai-modes) and ChatFunction's settings."""

from __future__ import annotations

import pytest
from lambda_agents.chat.conversation import PURPOSE, ConversationPolicy
from lambda_agents.chat.draft_schema import AiChatProcessTemplateJson
from lambda_agents.chat.mapper import TemplateDraftMapper
from lambda_agents.chat.offline import RESPONDERS, chat_answer
from lambda_agents.chat.output_parser import LLMOutputParser
from lambda_agents.chat.prompt import PromptBuilder
from lambda_agents.chat.records import SessionContext
from lambda_agents.chat.settings import ChatEnvironment
from lambda_agents.config import ConfigError, LLMSettings, load_settings
from lambda_agents.llm.factory import build_chat_model
from lambda_agents.llm.policy import TRANSIENT_KINDS
from lambda_agents.llm.types import ChatRequest
from lambda_agents.templates.validation import TemplateInvalid

from .answers import payload, step

MAPPER = TemplateDraftMapper()


def test_the_mapper_turns_nulls_into_the_dtos_empty_values_and_keeps_the_plan() -> None:
    draft = AiChatProcessTemplateJson.model_validate(payload(steps=2))
    dto = MAPPER.to_create_dto(draft, default_name="unused")
    assert dto.name == "中途採用"
    assert [(s.seq, s.basis, s.offset_days, s.required_artifacts, s.depends_on) for s in dto.step_templates] == [
        (1, "goal", -30, [], []),
        (2, "prev", 7, [], [1]),
    ]


def test_the_mapper_takes_the_default_name_when_the_draft_has_none() -> None:
    value = payload(process_template_draft={"name": None, "stepTemplates": [step(1)]})
    assert MAPPER.to_create_dto(value, default_name="既定の名前").name == "既定の名前"
    assert MAPPER.to_create_dto(value, default_name="既定", name="  指定 ").name == "指定"


def test_the_mapper_rejects_a_stored_json_that_no_longer_validates() -> None:
    with pytest.raises(TemplateInvalid) as raised:
        MAPPER.to_create_dto({"schema": "ai_chat_process_template.v1"}, default_name="x")
    assert raised.value.error_class == "ValidationFailed"


def _offline_request(context: SessionContext, message: str) -> ChatRequest:
    system = PromptBuilder().build_system_prompt(context)
    return ChatRequest(
        messages=[{"role": "system", "content": system}, {"role": "user", "content": message}],
        max_tokens=1200,
        purpose=PURPOSE,
    )


@pytest.mark.parametrize(
    ("context", "message", "first", "count"),
    [
        (SessionContext(processType="中途採用", goal="4月入社"), "段取りを作りたい", "求人票の作成", 5),
        (SessionContext(processType="中途採用"), "面接は2回にしてください", "求人票の作成", 6),
        (SessionContext(industry="製造業", processType="年次監査"), "お願いします", "資料の収集", 5),
        (SessionContext(), "何から始めればいい?", "要件の整理", 5),
    ],
)
def test_the_offline_answer_is_japanese_with_a_valid_fence_derived_from_the_context(
    context: SessionContext, message: str, first: str, count: int
) -> None:
    text = chat_answer(_offline_request(context, message))
    result = LLMOutputParser().extract_template_json(text)
    assert result.ok and result.data is not None and result.data.process_template_draft is not None
    steps = result.data.process_template_draft.step_templates
    assert (steps[0].name, len(steps)) == (first, count)
    assert text == chat_answer(_offline_request(context, message))  # deterministic


def test_the_offline_answer_lists_unset_context_as_missing_information() -> None:
    text = chat_answer(_offline_request(SessionContext(processType="中途採用"), "よろしく"))
    data = LLMOutputParser().extract_template_json(text).data
    assert data is not None and data.missing_information == ["業種", "目標", "地域"]


def test_mock_mode_builds_the_offline_model_with_the_chat_responder() -> None:
    model = build_chat_model(LLMSettings(AI_AGENT_MODE="mock"), responders=RESPONDERS)
    response = model.complete(_offline_request(SessionContext(processType="採用"), "お願いします"))
    assert response.content is not None and LLMOutputParser().extract_template_json(response.content).ok


def test_the_retry_policy_is_spec_5_one_retry_after_1_5_s_on_transient_failures_only() -> None:
    policy = ConversationPolicy().retry_policy()
    assert policy.max_attempts == 2 and policy.retry_on == TRANSIENT_KINDS
    assert policy.delay_s("timeout", 1) == 1.5 and policy.delay_s("rate_limit", 1, retry_after_s=0.2) == 1.5
    assert policy.delay_s("rate_limit", 1, retry_after_s=30) == 5.0
    assert (ConversationPolicy().temperature, ConversationPolicy().max_tokens) == (0.3, 1200)


def test_settings_have_the_spec_defaults() -> None:
    env = load_settings(ChatEnvironment, {"CHAT_TABLE": "Chat", "IDEMPOTENCY_TABLE": "Retries"})
    assert (env.history_window, env.max_tokens, env.retry_backoff_s, env.model_context_limit) == (
        12,
        1200,
        1.5,
        128_000,
    )
    assert env.audit_salt is None and env.audit_salt_parameter is None


TABLES = {"CHAT_TABLE": "Chat", "IDEMPOTENCY_TABLE": "Retries"}


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({}, "CHAT_TABLE"),
        ({"CHAT_TABLE": "Chat"}, "IDEMPOTENCY_TABLE"),
        ({**TABLES, "CHAT_HISTORY_WINDOW": "many"}, "CHAT_HISTORY_WINDOW"),
        ({**TABLES, "CHAT_RATE_LIMIT_PER_WINDOW": "0"}, "CHAT_RATE_LIMIT_PER_WINDOW"),
        ({**TABLES, "CHAT_MODEL_CONTEXT_LIMIT": "5000"}, "CHAT_MODEL_CONTEXT_LIMIT"),
    ],
)
def test_bad_settings_fail_at_start_naming_the_variable(environ: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        load_settings(ChatEnvironment, environ)


def test_the_salt_is_not_shown_in_the_settings_repr() -> None:
    env = load_settings(ChatEnvironment, {**TABLES, "AI_AUDIT_SALT": "very-secret"})
    assert "very-secret" not in repr(env)
