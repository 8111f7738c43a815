"""Process-template use cases (docs/chat-and-templates.md#process-templates), with their ports.

- ``create``: a CreateProcessTemplateDto from the API.
- ``create_once``: a DTO under an id its caller derives (``chat.template_from_session``: the
  session's draft), so creating it twice returns the first template (``created=False``) instead
  of a duplicate: a client that retries after a timeout does not double the template.
- ``search``: the caller's templates whose names resemble a text (the tolerant search).
- ``get`` / ``replace`` / ``patch`` / ``delete``: the caller's template by id; another user's is
  ``TemplateNotFound`` like a missing one. A change is validated exactly like a creation, then
  written in one transaction conditioned on the version read (``VersionConflict`` when the
  caller's ``If-Match`` names none of the versions it accepts). Without ``If-Match`` a change
  that loses a race is read again and retried after a jittered wait, up to ``CHANGE_ATTEMPTS``
  (a dozen concurrent writers of one template all land): the last writer wins, never half way.

Both creations report near-duplicates (a tolerant search's purpose is to prevent duplicate
registrations; docs/chat-and-templates.md#search-and-similar): the caller's other templates whose
names the tolerant search matches come back as ``similar``. The template is created all the same:
what is wanted is a search tolerant enough to find the candidates, not a refusal, and two processes
may rightly share a name; the client decides (rename, delete, or keep both).

The obvious design is an interactive transaction (insert steps with empty dependsOn, read back the
ids, update; docs/chat-and-templates.md#resolving-dependson-in-one-transaction). DynamoDB has none,
so the ids are decided first (``step_id``), dependsOn is resolved and the graph checked in memory,
and the template with every step is written in ONE TransactWriteItems: a rejected template writes
nothing, an accepted one is never half written.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Protocol

from ..clock import utc_now
from ..errors import DomainError
from .models import (
    CreateProcessTemplateDto,
    CreateStepTemplateDto,
    PatchProcessTemplateDto,
    ProcessTemplate,
    TemplateSource,
    step_id,
    to_process_template,
)
from .search import NamedTemplate, SearchHit, rank

CHANGE_ATTEMPTS = 12
# Each lost race waits a random part of a window that doubles (10, 20, 40, 80, 80... ms), so
# writers that collided do not read and write again in lock-step; at most ~0.7 s in all.
RETRY_WINDOW_S = 0.01
RETRY_WINDOW_MAX_S = 0.08
SIMILAR_LIMIT = 5


class TemplateRepository(Protocol):
    def create(self, template: ProcessTemplate) -> bool:
        """Write the template and its steps atomically; False when the template id exists."""
        ...

    def get(self, template_id: str) -> ProcessTemplate | None: ...

    def replace(self, template: ProcessTemplate, previous: ProcessTemplate, steps_changed: bool) -> bool:
        """Write ``template`` over ``previous`` atomically; False when the stored version moved."""
        ...

    def delete(self, template: ProcessTemplate) -> bool:
        """Delete the template and its steps atomically; False when the stored version moved."""
        ...

    def names_of(self, user_id: str) -> list[NamedTemplate]:
        """The user's templates (names and keys only), newest first."""
        ...


class TemplateIdTaken(DomainError):
    """A template id derived from a draft exists but belongs to someone else (never expected)."""

    status = 409
    code = "TEMPLATE_ID_TAKEN"


class TemplateNotFound(DomainError):
    """No such template, or not the caller's (the same 404, so ids of others are not disclosed)."""

    status = 404
    code = "TEMPLATE_NOT_FOUND"

    def __init__(self, template_id: str) -> None:
        super().__init__(f"no template {template_id!r}")
        self.template_id = template_id


# The versions an ``If-Match`` accepts (RFC 9110: any of its strong entity tags); None: any version.
Versions = frozenset[int]


class VersionConflict(DomainError):
    """The template is not at the version the caller read (``If-Match``): someone changed it. The
    answer names the current version (``details`` and ``ETag``) for the client to read again."""

    status = 409
    code = "VERSION_CONFLICT"

    def __init__(self, template_id: str, current: int) -> None:
        super().__init__(
            f"template {template_id} is at version {current}; read it again and reapply the change",
            details={"currentVersion": current},
            headers={"ETag": f'"{current}"'},
        )
        self.current = current


@dataclass(frozen=True)
class CreateOutcome:
    template: ProcessTemplate
    created: bool
    similar: list[SearchHit] = field(default_factory=list)


@dataclass
class ProcessTemplateService:
    templates: TemplateRepository
    clock: Callable[[], datetime] = utc_now
    new_id: Callable[[], str] = field(default=lambda: uuid.uuid4().hex)
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[float], float] = field(default=lambda window: random.uniform(0.0, window))

    def create(self, user_id: str, dto: CreateProcessTemplateDto) -> CreateOutcome:
        template = self._build(user_id, dto, self.new_id(), TemplateSource("dto"))
        similar = self.similar(user_id, template)
        if not self.templates.create(template):
            raise TemplateIdTaken(f"template id {template.template_id} already exists")
        return CreateOutcome(template, created=True, similar=similar)

    def create_once(
        self, user_id: str, dto: CreateProcessTemplateDto, template_id: str, source: TemplateSource
    ) -> CreateOutcome:
        """The template under ``template_id``: created, or the caller's one already there."""
        template = self._build(user_id, dto, template_id, source)
        similar = self.similar(user_id, template)
        if self.templates.create(template):
            return CreateOutcome(template, created=True, similar=similar)
        existing = self.templates.get(template_id)
        if existing is None or existing.user_id != user_id:
            raise TemplateIdTaken(f"template id {template_id} is not the caller's")
        return CreateOutcome(existing, created=False, similar=self.similar(user_id, existing))

    def similar(self, user_id: str, template: ProcessTemplate) -> list[SearchHit]:
        """The caller's other templates whose names resemble this one's, best first."""
        others = [t for t in self.templates.names_of(user_id) if t.template_id != template.template_id]
        return rank(template.name, others, SIMILAR_LIMIT)

    def get(self, user_id: str, template_id: str) -> ProcessTemplate:
        template = self.templates.get(template_id)
        if template is None or template.user_id != user_id:
            raise TemplateNotFound(template_id)
        return template

    def replace(
        self, user_id: str, template_id: str, dto: CreateProcessTemplateDto, if_match: Versions | None = None
    ) -> ProcessTemplate:
        """The whole template (name and steps) replaced; raises TemplateInvalid before any write."""
        return self._change(user_id, template_id, if_match, dto.name, dto.step_templates)

    def patch(
        self, user_id: str, template_id: str, patch: PatchProcessTemplateDto, if_match: Versions | None = None
    ) -> ProcessTemplate:
        """The name and / or the whole step list replaced; what is not given stays."""
        return self._change(user_id, template_id, if_match, patch.name, patch.step_templates)

    def delete(self, user_id: str, template_id: str, if_match: Versions | None = None) -> ProcessTemplate:
        """The template and all its steps, in one transaction; returns what was deleted."""
        for attempt in range(CHANGE_ATTEMPTS):
            current = self._current(user_id, template_id, if_match)
            if self.templates.delete(current):
                return current
            if if_match is not None:
                raise self._conflict(user_id, template_id)
            self._back_off(attempt)
        raise self._conflict(user_id, template_id)

    def _change(
        self,
        user_id: str,
        template_id: str,
        if_match: Versions | None,
        name: str | None,
        steps: list[CreateStepTemplateDto] | None,
    ) -> ProcessTemplate:
        """``name`` and ``steps`` replaced (None: unchanged), validated like a creation."""
        for attempt in range(CHANGE_ATTEMPTS):
            current = self._current(user_id, template_id, if_match)
            version = current.version + 1
            updated = replace(current, version=version, updated_at=self._now())
            if name is not None:
                updated = replace(updated, name=name.strip())
            if steps is not None:
                built = to_process_template(
                    CreateProcessTemplateDto(name=updated.name, step_templates=steps),
                    template_id=template_id,
                    user_id=user_id,
                    created_at=current.created_at,
                    source=current.source,
                    step_ids={step.seq: step_id(template_id, step.seq, version) for step in steps},
                )
                updated = replace(updated, steps=built.steps)
            if self.templates.replace(updated, current, steps_changed=steps is not None):
                return updated
            if if_match is not None:
                raise self._conflict(user_id, template_id)
            self._back_off(attempt)
        raise self._conflict(user_id, template_id)

    def _back_off(self, attempt: int) -> None:
        if attempt + 1 < CHANGE_ATTEMPTS:
            self.sleep(self.jitter(min(RETRY_WINDOW_MAX_S, RETRY_WINDOW_S * 2.0**attempt)))

    def _current(self, user_id: str, template_id: str, if_match: Versions | None) -> ProcessTemplate:
        current = self.get(user_id, template_id)
        if if_match is not None and current.version not in if_match:
            raise VersionConflict(template_id, current.version)
        return current

    def _conflict(self, user_id: str, template_id: str) -> VersionConflict:
        """The conflict to raise after a refused write; TemplateNotFound when it was deleted."""
        return VersionConflict(template_id, self.get(user_id, template_id).version)

    def _now(self) -> str:
        return self.clock().isoformat(timespec="milliseconds")

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
            created_at=self._now(),
            source=source,
            step_ids={step.seq: step_id(template_id, step.seq) for step in dto.step_templates},
        )
