"""The process-template use cases (docs/chat-and-templates.md#process-templates) on in-memory ports: a DTO, a
chat session's latest draft (once per draft), the session's owner only, and the tolerant search
over the caller's templates."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from lambda_agents.chat.records import DraftRecord, NoTemplateDraft, SessionContext, SessionNotFound, SessionRecord
from lambda_agents.chat.template_from_session import TemplateFromSession
from lambda_agents.templates.models import CreateProcessTemplateDto
from lambda_agents.templates.service import ProcessTemplateService
from lambda_agents.templates.validation import TemplateInvalid

from tests.support.memory_templates import InMemoryTemplates
from tests.support.step_plans import chained_steps

SCHEMA = "ai_chat_process_template.v1"


class InMemoryDrafts:
    def __init__(self) -> None:
        self.sessions: dict[str, SessionRecord] = {}
        self.drafts: dict[str, list[DraftRecord]] = {}

    def add(self, session_id: str, user_id: str, *payloads: dict[str, Any], **context: str) -> None:
        self.sessions[session_id] = SessionRecord(session_id, user_id, SessionContext.model_validate(context), "c")
        self.drafts[session_id] = [DraftRecord(session_id, 2 * i + 2, p, "c") for i, p in enumerate(payloads)]

    def get_session(self, session_id: str) -> SessionRecord | None:
        return self.sessions.get(session_id)

    def latest_draft(self, session_id: str) -> DraftRecord | None:
        drafts = self.drafts.get(session_id) or []
        return drafts[-1] if drafts else None


def draft(*step_names: str, name: str | None = "中途採用") -> dict[str, Any]:
    steps = chained_steps(*step_names, goal_offset_days=-20, after_previous_days=5)
    return {
        "schema": SCHEMA,
        "answer": "案",
        "missing_information": None,
        "process_template_draft": {"name": name, "stepTemplates": steps},
    }


@pytest.fixture
def ports() -> tuple[ProcessTemplateService, InMemoryTemplates, InMemoryDrafts, TemplateFromSession]:
    templates, drafts = InMemoryTemplates(), InMemoryDrafts()
    ticks = iter(range(1, 1000))
    service = ProcessTemplateService(templates, clock=lambda: datetime(2026, 1, 1, 0, 0, next(ticks), tzinfo=UTC))
    return service, templates, drafts, TemplateFromSession(service, drafts)


def test_given_a_dto_then_the_template_is_stored_with_resolved_ids(ports: Any) -> None:
    service, templates, _, _ = ports
    dto = CreateProcessTemplateDto.model_validate(
        {"name": " 月次決算 ", "stepTemplates": draft("a", "b")["process_template_draft"]["stepTemplates"]}
    )
    outcome = service.create("u1", dto)
    stored = templates.items[outcome.template.template_id]
    assert outcome.created and stored.name == "月次決算" and stored.user_id == "u1"
    assert stored.steps[1].depends_on == [stored.steps[0].step_id]


def test_given_an_invalid_dto_then_nothing_is_written(ports: Any) -> None:
    service, templates, _, _ = ports
    steps = draft("a", "b")["process_template_draft"]["stepTemplates"]
    steps[1]["seq"] = 3
    with pytest.raises(TemplateInvalid, match="SeqGap"):
        service.create("u1", CreateProcessTemplateDto.model_validate({"name": "x", "stepTemplates": steps}))
    assert templates.writes == 0


def test_given_a_session_then_its_latest_draft_becomes_the_template(ports: Any) -> None:
    _, _, drafts, from_session = ports
    drafts.add("s1", "u1", draft("古い案"), draft("求人", "面接"))
    outcome = from_session.create("u1", "s1")
    assert [s.name for s in outcome.template.steps] == ["求人", "面接"]
    assert outcome.template.source.as_dict() == {"kind": "chat", "sessionId": "s1", "draftSeq": 4}


def test_given_the_same_draft_twice_then_the_first_template_is_returned_not_a_duplicate(ports: Any) -> None:
    _, templates, drafts, from_session = ports
    drafts.add("s1", "u1", draft("求人", "面接"))
    first = from_session.create("u1", "s1")
    second = from_session.create("u1", "s1")
    assert (first.created, second.created) == (True, False)
    assert second.template.template_id == first.template.template_id and len(templates.items) == 1


def test_given_another_users_session_then_it_is_not_found(ports: Any) -> None:
    _, templates, drafts, from_session = ports
    drafts.add("s1", "owner", draft("求人"))
    with pytest.raises(SessionNotFound):
        from_session.create("intruder", "s1")
    with pytest.raises(SessionNotFound):
        from_session.create("owner", "nope")
    assert templates.writes == 0


def test_given_a_session_without_a_draft_then_no_template_draft(ports: Any) -> None:
    _, _, drafts, from_session = ports
    drafts.add("s1", "u1")
    with pytest.raises(NoTemplateDraft):
        from_session.create("u1", "s1")


def test_given_a_draft_without_a_name_then_the_name_comes_from_the_session_context(ports: Any) -> None:
    _, _, drafts, from_session = ports
    drafts.add("s1", "u1", draft("求人", name=None), processType="中途採用")
    assert from_session.create("u1", "s1").template.name == "中途採用のプロセス"
    drafts.add("s2", "u1", draft("求人", name=None))
    assert from_session.create("u1", "s2").template.name == "AIチャットで作成したプロセス"


def test_given_a_name_in_the_request_then_it_replaces_the_drafts(ports: Any) -> None:
    _, _, drafts, from_session = ports
    drafts.add("s1", "u1", draft("求人"))
    assert from_session.create("u1", "s1", name="エンジニア採用 2026").template.name == "エンジニア採用 2026"


def test_given_a_stored_draft_with_no_plan_then_the_mapper_says_so(ports: Any) -> None:
    _, _, drafts, from_session = ports
    drafts.add("s1", "u1", {**draft("x"), "process_template_draft": None})
    with pytest.raises(TemplateInvalid) as raised:
        from_session.create("u1", "s1")
    assert raised.value.error_class == "NoTemplateDraft"


def test_search_finds_only_the_callers_near_duplicates(ports: Any) -> None:
    service, _, drafts, from_session = ports
    drafts.add("s1", "u1", draft("求人", name="チェックリスト作成"))
    drafts.add("s2", "u2", draft("求人", name="チェックリスト作成"))
    from_session.create("u1", "s1")
    from_session.create("u2", "s2")
    hits = service.search("u1", "ﾁｪｯｸﾘｽﾄ 作成", 10)
    assert [(hit.template.name, hit.score) for hit in hits] == [("チェックリスト作成", 1.0)]
    assert service.recent("u1", 10)[0].name == "チェックリスト作成"
