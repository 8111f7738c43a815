"""The in-memory ``TemplateRepository`` the unit tests use instead of DynamoDB. The contract test
(``tests/integration/templates/test_template_store_contract.py``) holds it to the same behaviour
as ``storage.templates.DynamoTemplateStore``, so a unit test's fake cannot drift from the adapter."""

from __future__ import annotations

from lambda_agents.templates.models import ProcessTemplate
from lambda_agents.templates.search import NamedTemplate, name_key


class InMemoryTemplates:
    def __init__(self) -> None:
        self.items: dict[str, ProcessTemplate] = {}
        self.writes = 0

    def create(self, template: ProcessTemplate) -> bool:
        self.writes += 1
        if template.template_id in self.items:
            return False
        self.items[template.template_id] = template
        return True

    def get(self, template_id: str) -> ProcessTemplate | None:
        return self.items.get(template_id)

    def replace(self, template: ProcessTemplate, previous: ProcessTemplate, steps_changed: bool) -> bool:
        self.writes += 1
        stored = self.items.get(template.template_id)
        if stored is None or stored.version != previous.version:
            return False
        self.items[template.template_id] = template
        return True

    def delete(self, template: ProcessTemplate) -> bool:
        self.writes += 1
        stored = self.items.get(template.template_id)
        if stored is None or stored.version != template.version:
            return False
        del self.items[template.template_id]
        return True

    def names_of(self, user_id: str) -> list[NamedTemplate]:
        mine = [t for t in self.items.values() if t.user_id == user_id]
        mine.sort(key=lambda t: t.created_at, reverse=True)
        return [NamedTemplate(t.template_id, t.name, t.created_at, len(t.steps), name_key(t.name)) for t in mine]
