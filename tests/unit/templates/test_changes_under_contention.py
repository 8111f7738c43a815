"""A change without If-Match is the last writer's, even against a dozen concurrent writers: each
lost race is read again after a jittered, growing wait; a change with If-Match is refused at its
first lost race, and If-Match accepts any of the versions it names (RFC 9110;
docs/chat-and-templates.md#versions-and-if-match)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from lambda_agents.templates.models import CreateProcessTemplateDto, PatchProcessTemplateDto, ProcessTemplate
from lambda_agents.templates.service import (
    CHANGE_ATTEMPTS,
    RETRY_WINDOW_MAX_S,
    ProcessTemplateService,
    VersionConflict,
)

from tests.support.memory_templates import InMemoryTemplates

from .test_service import draft


class ContendedTemplates(InMemoryTemplates):
    """Each write is beaten by another writer ``losses`` times first (the version moves on)."""

    def __init__(self, losses: int) -> None:
        super().__init__()
        self.losses = losses

    def _lost(self, current: ProcessTemplate) -> bool:
        if self.losses <= 0:
            return False
        self.losses -= 1
        stored = self.items[current.template_id]
        self.items[current.template_id] = replace(stored, version=stored.version + 1)
        return True

    def replace(self, template: ProcessTemplate, previous: ProcessTemplate, steps_changed: bool) -> bool:
        return not self._lost(previous) and super().replace(template, previous, steps_changed)

    def delete(self, template: ProcessTemplate) -> bool:
        return not self._lost(template) and super().delete(template)


def contended(losses: int) -> tuple[ProcessTemplateService, ContendedTemplates, list[float], str]:
    templates = ContendedTemplates(losses=0)
    waits: list[float] = []
    service = ProcessTemplateService(
        templates,
        clock=lambda: datetime(2026, 1, 1, tzinfo=UTC),
        sleep=waits.append,
        jitter=lambda window: window,  # the whole window: the longest the waits can be
    )
    steps = draft("a", "b")["process_template_draft"]["stepTemplates"]
    created = service.create(
        "u1", CreateProcessTemplateDto.model_validate({"name": "月次決算", "stepTemplates": steps})
    )
    templates.losses = losses
    return service, templates, waits, created.template.template_id


def test_without_if_match_a_change_that_loses_many_races_still_lands_as_the_last_write() -> None:
    service, templates, waits, template_id = contended(losses=CHANGE_ATTEMPTS - 1)
    changed = service.patch("u1", template_id, PatchProcessTemplateDto.model_validate({"name": "四半期決算"}))
    assert templates.items[template_id].name == "四半期決算" and changed.version == CHANGE_ATTEMPTS + 1
    assert len(waits) == CHANGE_ATTEMPTS - 1
    assert waits == sorted(waits) and waits[0] > 0 and max(waits) == RETRY_WINDOW_MAX_S
    assert sum(waits) < 1.0  # bounded well inside an API request


def test_a_delete_without_if_match_is_retried_the_same_way() -> None:
    service, templates, waits, template_id = contended(losses=5)
    service.delete("u1", template_id)
    assert template_id not in templates.items and len(waits) == 5


def test_with_if_match_the_first_lost_race_is_a_conflict_and_nothing_waits() -> None:
    service, templates, waits, template_id = contended(losses=1)
    with pytest.raises(VersionConflict) as conflict:
        service.patch("u1", template_id, PatchProcessTemplateDto.model_validate({"name": "x"}), frozenset({1}))
    assert conflict.value.current == 2 and waits == []
    assert templates.items[template_id].name == "月次決算"


@pytest.mark.parametrize(
    ("accepted", "lands"), [(frozenset({5, 1}), True), (frozenset({2}), False), (frozenset(), False)]
)
def test_if_match_accepts_any_of_the_versions_it_names(accepted: frozenset[int], lands: bool) -> None:
    service, templates, _, template_id = contended(losses=0)
    patch = PatchProcessTemplateDto.model_validate({"name": "四半期決算"})
    if lands:
        assert service.patch("u1", template_id, patch, accepted).version == 2
    else:
        with pytest.raises(VersionConflict):
            service.patch("u1", template_id, patch, accepted)
        assert templates.items[template_id].version == 1
