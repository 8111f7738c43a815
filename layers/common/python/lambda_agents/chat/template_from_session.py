"""A process template made from a chat session: the caller's session's latest valid draft,
mapped by ``TemplateDraftMapper`` and created through the templates' own use case
(docs/chat-and-templates.md#templates-made-from-a-chat-session).

It lives on the chat side because it reads chat sessions and drafts: the templates package knows
nothing of chat. The template id is derived from the session's ``templateSeed`` and the draft's
seq, so creating from the same draft twice returns the first template (``created=False``) instead
of a duplicate: a client that retries after a timeout does not double the template.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..templates.models import TemplateSource, chat_template_id
from ..templates.service import CreateOutcome, ProcessTemplateService
from .mapper import TemplateDraftMapper
from .records import DraftRecord, NoTemplateDraft, SessionNotFound, SessionRecord


class DraftSource(Protocol):
    """The chat sessions, read only."""

    def get_session(self, session_id: str) -> SessionRecord | None: ...

    def latest_draft(self, session_id: str) -> DraftRecord | None: ...


@dataclass
class TemplateFromSession:
    templates: ProcessTemplateService
    drafts: DraftSource
    mapper: TemplateDraftMapper = field(default_factory=TemplateDraftMapper)

    def create(self, user_id: str, session_id: str, name: str | None = None) -> CreateOutcome:
        """The template of the session's latest draft; ``SessionNotFound`` for another user's."""
        session = self.drafts.get_session(session_id)
        if session is None or session.user_id != user_id:
            raise SessionNotFound(session_id)
        draft = self.drafts.latest_draft(session_id)
        if draft is None:
            raise NoTemplateDraft(session_id)
        dto = self.mapper.to_create_dto(draft.payload, default_name=session.context.template_name(), name=name)
        template_id = chat_template_id(session.template_link, draft.seq)
        return self.templates.create_once(user_id, dto, template_id, TemplateSource("chat", session_id, draft.seq))
