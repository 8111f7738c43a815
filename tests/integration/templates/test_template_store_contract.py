"""Contract: the in-memory template store the unit tests use (``tests.support.memory_templates``)
behaves as the DynamoDB adapter does (``storage.templates.DynamoTemplateStore`` on moto): a second
create of an id is refused, a replace or delete that does not name the stored version is refused
and changes nothing, and a user's names come newest first and never another user's. Every test
runs against both."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from lambda_agents.storage.templates import DynamoTemplateStore
from lambda_agents.templates.models import (
    CreateProcessTemplateDto,
    ProcessTemplate,
    TemplateSource,
    step_id,
    to_process_template,
)
from lambda_agents.templates.service import TemplateRepository

from tests.integration.chat.chat_api import chat_tables
from tests.support.memory_templates import InMemoryTemplates
from tests.support.step_plans import chained_steps

pytestmark = pytest.mark.integration


@pytest.fixture(params=["memory", "dynamodb"])
def store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[TemplateRepository]:
    if request.param == "memory":
        yield InMemoryTemplates()
        return
    with chat_tables(monkeypatch):
        yield DynamoTemplateStore("ProcessTemplatesTable")


T1, T_OLD, T_NEW, T_OTHER, T_MISSING = (f"{n:032x}" for n in range(1, 6))  # template ids are UUIDs


def template(
    template_id: str, user_id: str = "u1", *names: str, created_at: str = "2026-11-26T00:00:00.000+00:00"
) -> Any:
    steps = chained_steps(*(names or ("求人",)), goal_offset_days=-10, after_previous_days=3)
    dto = CreateProcessTemplateDto.model_validate({"name": f"名前 {template_id}", "stepTemplates": steps})
    return to_process_template(
        dto,
        template_id=template_id,
        user_id=user_id,
        created_at=created_at,
        source=TemplateSource("dto"),
        step_ids={step.seq: step_id(template_id, step.seq) for step in dto.step_templates},
    )


def next_version(current: ProcessTemplate, *names: str) -> ProcessTemplate:
    version = current.version + 1
    rebuilt = template(current.template_id, current.user_id, *names, created_at=current.created_at)
    steps = [replace(step, step_id=step_id(current.template_id, step.seq, version)) for step in rebuilt.steps]
    return replace(current, version=version, updated_at="2026-11-26T01:00:00.000+00:00", steps=steps)


def test_a_template_is_stored_once_and_read_back_whole(store: TemplateRepository) -> None:
    first = template(T1, "u1", "求人", "面接")
    assert store.create(first) is True
    assert store.create(template(T1, "u1", "別")) is False
    assert store.get(T1) == first
    assert store.get(T_MISSING) is None


def test_a_replace_naming_the_stored_version_lands_and_a_stale_one_changes_nothing(store: TemplateRepository) -> None:
    first = template(T1, "u1", "求人")
    store.create(first)
    second = next_version(first, "求人", "面接")

    assert store.replace(second, first, steps_changed=True) is True
    assert store.get(T1) == second
    assert store.replace(next_version(first, "古い"), first, steps_changed=True) is False  # first is stale now
    assert store.get(T1) == second


def test_a_delete_naming_the_stored_version_removes_it_and_a_stale_one_is_refused(store: TemplateRepository) -> None:
    first = template(T1, "u1", "求人")
    store.create(first)
    second = next_version(first, "面接")
    store.replace(second, first, steps_changed=True)

    assert store.delete(first) is False
    assert store.get(T1) == second
    assert store.delete(second) is True
    assert store.get(T1) is None
    assert store.delete(second) is False


def test_a_users_names_come_newest_first_and_never_another_users(store: TemplateRepository) -> None:
    store.create(template(T_OLD, "u1", created_at="2026-11-24T00:00:00.000+00:00"))
    store.create(template(T_NEW, "u1", "a", "b", created_at="2026-11-25T00:00:00.000+00:00"))
    store.create(template(T_OTHER, "u2"))

    names = store.names_of("u1")

    assert [(n.template_id, n.step_count) for n in names] == [(T_NEW, 2), (T_OLD, 1)]
    assert [n.name for n in names] == [f"名前 {T_NEW}", f"名前 {T_OLD}"]
    assert store.names_of("nobody") == []
