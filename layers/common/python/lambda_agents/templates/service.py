"""Process-template use cases (spec 001 4.2 CreateProcessTemplateUseCase and A), with their ports.

- ``create``: a CreateProcessTemplateDto from the API.
- ``create_from_session``: the caller's chat session's latest valid draft, through
  TemplateDraftMapper. Its template id is derived from (session, draft seq), so creating from the
  same draft twice returns the first template (``created=False``) instead of a duplicate: a
  client that retries after a timeout does not double the template.
- ``search``: the caller's templates whose names resemble a text (the tolerant search).

Spec 001 A describes an interactive transaction (insert steps with empty dependsOn, read back the
ids, update). DynamoDB has none, so the ids are decided first (``step_id``), dependsOn is resolved
and the graph checked in memory, and the template with every step is written in ONE
TransactWriteItems: a rejected template writes nothing, an accepted one is never half written.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from ..chat.mapper import TemplateDraftMapper
from ..chat.records import DraftRecord, NoTemplateDraft, SessionNotFound, SessionRecord
from .models import CreateProcessTemplateDto, ProcessTemplate, TemplateSource, to_process_template
from .search import NamedTemplate, SearchHit, rank

_CHAT_TEMPLATE_NAMESPACE = uuid.UUID("8f4d1c52-3b7e-4f0a-9a51-2f6a0c1d7e93")


class TemplateRepository(Protocol):
    def create(self, template: ProcessTemplate) -> bool:
        """Write the template and its steps atomically; False when the template id exists."""
        ...

    def get(self, template_id: str) -> ProcessTemplate | None: ...

    def names_of(self, user_id: str) -> list[NamedTemplate]:
        """The user's templates (names and keys only), newest first."""
        ...


class DraftSource(Protocol):
    """The chat sessions, read only."""

    def get_session(self, session_id: str) -> SessionRecord | None: ...

    def latest_draft(self, session_id: str) -> DraftRecord | None: ...


class TemplateIdTaken(RuntimeError):
    """A template id derived from a draft exists but belongs to someone else (never expected)."""


@dataclass(frozen=True)
class CreateOutcome:
    template: ProcessTemplate
    created: bool


def step_id(template_id: str, seq: int) -> str:
    """Deterministic per template, so a retried write produces the same items."""
    return uuid.uuid5(uuid.UUID(template_id), f"step-{seq}").hex


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class ProcessTemplateService:
    templates: TemplateRepository
    drafts: DraftSource
    clock: Callable[[], datetime] = utc_now
    new_id: Callable[[], str] = field(default=lambda: uuid.uuid4().hex)
    mapper: TemplateDraftMapper = field(default_factory=TemplateDraftMapper)

    def create(self, user_id: str, dto: CreateProcessTemplateDto) -> CreateOutcome:
        template = self._build(user_id, dto, self.new_id(), TemplateSource("dto"))
        if not self.templates.create(template):
            raise TemplateIdTaken(f"template id {template.template_id} already exists")
        return CreateOutcome(template, created=True)

    def create_from_session(self, user_id: str, session_id: str, name: str | None = None) -> CreateOutcome:
        session = self.drafts.get_session(session_id)
        if session is None or session.user_id != user_id:
            raise SessionNotFound(session_id)
        draft = self.drafts.latest_draft(session_id)
        if draft is None:
            raise NoTemplateDraft(session_id)
        dto = self.mapper.to_create_dto(draft.payload, default_name=session.context.template_name(), name=name)
        template_id = uuid.uuid5(_CHAT_TEMPLATE_NAMESPACE, f"{session_id}#{draft.seq}").hex
        template = self._build(user_id, dto, template_id, TemplateSource("chat", session_id, draft.seq))
        if self.templates.create(template):
            return CreateOutcome(template, created=True)
        existing = self.templates.get(template_id)
        if existing is None or existing.user_id != user_id:
            raise TemplateIdTaken(f"template id {template_id} is not the caller's")
        return CreateOutcome(existing, created=False)

    def search(self, user_id: str, text: str, limit: int) -> list[SearchHit]:
        return rank(text, self.templates.names_of(user_id), limit)

    def recent(self, user_id: str, limit: int) -> list[NamedTemplate]:
        return self.templates.names_of(user_id)[:limit]

    def _build(
        self, user_id: str, dto: CreateProcessTemplateDto, template_id: str, source: TemplateSource
    ) -> ProcessTemplate:
        return to_process_template(
            dto,
            template_id=template_id,
            user_id=user_id,
            created_at=self.clock().isoformat(timespec="milliseconds"),
            source=source,
            step_ids={step.seq: step_id(template_id, step.seq) for step in dto.step_templates},
        )
