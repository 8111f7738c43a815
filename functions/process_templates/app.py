"""ProcessTemplatesFunction: process templates (docs/chat-and-templates.md#process-templates), Cognito-authorised.

- ``POST /process-templates`` (CreateProcessTemplateDto) -> 201 ``{templateId, ...}``.
- ``POST /ai-agent/sessions/{sessionId}/process-template`` -> 201 from the session's latest valid
  template JSON (TemplateDraftMapper); 200 with ``created: false`` when that draft already made a
  template; 404 for a session that is not the caller's; 409 when the session has no draft yet.
- ``GET /process-templates?search=&limit=`` -> the caller's templates whose names resemble
  ``search`` (width, kana, case, spacing and punctuation folded), best first; without ``search``,
  the caller's newest templates.
- ``GET /process-templates/{templateId}`` -> the template with its steps, ``ETag: "<version>"``.
- ``PUT /process-templates/{templateId}`` (CreateProcessTemplateDto) replaces name and steps;
  ``PATCH`` (``{name?, stepTemplates?}``) replaces what it names. Same rules as create, one
  transaction; ``If-Match: "<version>"`` makes it conditional (409 ``VERSION_CONFLICT`` when the
  template moved on). Without it the change is still atomic and the last writer wins.
- ``DELETE /process-templates/{templateId}`` -> the template and all its steps, one transaction
  (``If-Match`` honoured the same way).

Both creations answer ``similar``: the caller's other templates the tolerant search finds for the
new name (possible duplicates); the template is created all the same. Another user's template is
a 404 like a missing one.

A template that breaks a step-plan rule (docs/chat-and-templates.md#step-plan-rules) is a 400
``TEMPLATE_INVALID`` whose ``details.errorClass`` names the rule (SeqGap, SeqDuplicate,
ForwardReference, DependencyCycle, ...); it writes nothing.
This function makes no LLM call and imports no LLM code.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path, Query
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from lambda_agents.api.identity import caller_user_id
from lambda_agents.api.resolver import build_resolver, domain_error_answer
from lambda_agents.chat.requests import SESSION_ID_MAX_CHARS, SESSION_ID_PATTERN
from lambda_agents.chat.template_from_session import TemplateFromSession
from lambda_agents.composition import CompositionRoot
from lambda_agents.config import load_settings
from lambda_agents.observability import logger, metrics
from lambda_agents.storage.chat import DynamoChatStore
from lambda_agents.storage.templates import DynamoTemplateStore
from lambda_agents.templates.models import CreateProcessTemplateDto, PatchProcessTemplateDto, ProcessTemplate
from lambda_agents.templates.requests import TEMPLATE_ID_PATTERN, TemplateFromSessionRequest
from lambda_agents.templates.service import (
    CreateOutcome,
    ProcessTemplateService,
    Versions,
)
from lambda_agents.templates.validation import TemplateInvalid
from lambda_agents.templates.views import TemplateAnswer, TemplateDeleted, TemplateSearchAnswer, TemplateView
from pydantic import BaseModel, ConfigDict, Field

app = build_resolver()
ENTITY_TAG = re.compile(r'(W/)?"([^"]*)"')
VERSION = re.compile(r"[1-9][0-9]{0,8}")
SEARCH_MAX_CHARS = 200
ChangeT = TypeVar("ChangeT", CreateProcessTemplateDto, PatchProcessTemplateDto)
TemplateId = Annotated[
    str, Path(pattern=TEMPLATE_ID_PATTERN, max_length=32, description="the templateId a creation returned")
]
IfMatch = Annotated[
    str | None,
    Header(
        alias="If-Match",
        pattern=r'^\s*(\*|"?[1-9][0-9]{0,8}"?|(W/)?"[^"]{0,32}"(\s*,\s*(W/)?"[^"]{0,32}"){0,15})\s*$',
        description='the ETag (version) the change is based on, e.g. "3", or a list of them: a template at none '
        'of them is a 409. As RFC 9110 says: "*" accepts any version, and a weak tag (W/"3") never matches',
    ),
]


class TemplatesSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    templates_table: str = Field(alias="TEMPLATES_TABLE", min_length=1)
    chat_table: str = Field(alias="CHAT_TABLE", min_length=1)


@dataclass(frozen=True)
class Dependencies:
    templates: ProcessTemplateService
    from_session: TemplateFromSession


def bootstrap(
    *, settings: TemplatesSettings | None = None, templates: ProcessTemplateService | None = None
) -> Dependencies:
    """The function's composition root (``lambda_agents.composition``)."""
    settings = settings or load_settings(TemplatesSettings)
    templates = templates or ProcessTemplateService(DynamoTemplateStore(settings.templates_table))
    return Dependencies(templates, TemplateFromSession(templates, DynamoChatStore(settings.chat_table)))


dependencies = CompositionRoot(bootstrap)


@app.exception_handler(TemplateInvalid)  # type: ignore[untyped-decorator]
def _rejected(error: TemplateInvalid) -> Response[str]:
    """Counted, then answered like every domain error (``api.resolver.domain_error_answer``)."""
    logger.info("template rejected", extra={"error_class": error.error_class, "problems": len(error.problems)})
    metrics.add_metric(name="TemplatesRejected", unit=MetricUnit.Count, value=1)
    return domain_error_answer(error)


def _answer(outcome: CreateOutcome) -> TemplateAnswer:
    if outcome.created:
        metrics.add_metric(name="TemplatesCreated", unit=MetricUnit.Count, value=1)
        logger.info(
            "template created",
            extra={"template_id": outcome.template.template_id, "similar": len(outcome.similar)},
        )
    metrics.add_metric(name="TemplatesWithSimilar", unit=MetricUnit.Count, value=int(bool(outcome.similar)))
    similar = [hit.as_dict() for hit in outcome.similar]
    return TemplateAnswer.model_validate(
        {**outcome.template.as_response(), "created": outcome.created, "similar": similar}
    )


def _version(if_match: str | None) -> Versions | None:
    """The versions an If-Match accepts (RFC 9110 13.1.1): None for ``*`` (any current one), else
    its strong tags; a weak tag never matches, since If-Match compares strongly."""
    text = None if if_match is None else if_match.strip()
    if text is None or text == "*":
        return None
    if text.isdigit():  # an unquoted version, accepted as before
        return frozenset({int(text)})
    return frozenset(int(tag) for weak, tag in ENTITY_TAG.findall(text) if not weak and VERSION.fullmatch(tag))


def _current(template: ProcessTemplate) -> Response[TemplateView]:
    return Response(
        status_code=200,
        content_type="application/json",
        body=TemplateView.model_validate(template.as_response()),
        headers={"ETag": template.etag},
    )


@app.post("/process-templates", status_code=201, summary="Create a process template")
def create_template(body: CreateProcessTemplateDto) -> TemplateAnswer:
    user_id = caller_user_id(app.current_event.raw_event)
    outcome = dependencies().templates.create(user_id, body)
    return _answer(outcome)


@app.post(
    "/ai-agent/sessions/<sessionId>/process-template",
    status_code=201,
    summary="Create a process template from the session's latest valid draft",
    responses={
        200: {
            "description": "This draft already made a template: it is returned, created=false",
            "content": {"application/json": {"model": TemplateAnswer}},
        },
        201: {"description": "Created", "content": {"application/json": {"model": TemplateAnswer}}},
    },
)
def template_from_session(
    sessionId: Annotated[str, Path(pattern=SESSION_ID_PATTERN, max_length=SESSION_ID_MAX_CHARS)],  # noqa: N803 - the route's name
    body: Annotated[TemplateFromSessionRequest | None, Body()] = None,
) -> Response[TemplateAnswer]:
    user_id = caller_user_id(app.current_event.raw_event)
    outcome = dependencies().from_session.create(user_id, sessionId, None if body is None else body.name)
    status = 201 if outcome.created else 200
    return Response(status_code=status, content_type="application/json", body=_answer(outcome))


@app.get("/process-templates", summary="Find the caller's templates by a name, tolerantly")
def search_templates(
    search: Annotated[str | None, Query(max_length=SEARCH_MAX_CHARS, description="a name, typed loosely")] = None,
    limit: Annotated[int, Query(ge=1, le=50)] = 10,
) -> TemplateSearchAnswer:
    user_id = caller_user_id(app.current_event.raw_event)
    if search is not None and search.strip():
        hits = dependencies().templates.search(user_id, search, limit)
        items = [hit.as_dict() for hit in hits]
        return TemplateSearchAnswer.model_validate({"items": items, "count": len(items), "search": search})
    recent = dependencies().templates.recent(user_id, limit)
    items = [
        {"templateId": t.template_id, "name": t.name, "createdAt": t.created_at, "stepCount": t.step_count}
        for t in recent
    ]
    return TemplateSearchAnswer.model_validate({"items": items, "count": len(items), "search": None})


@app.get("/process-templates/<templateId>", summary="Read one of the caller's templates with its steps")
def get_template(templateId: TemplateId) -> Response[TemplateView]:  # noqa: N803 - the route's name
    user_id = caller_user_id(app.current_event.raw_event)
    return _current(dependencies().templates.get(user_id, templateId))


@app.put("/process-templates/<templateId>", summary="Replace a template's name and steps (one transaction)")
def replace_template(
    templateId: TemplateId,  # noqa: N803 - the route's name
    body: CreateProcessTemplateDto,
    if_match: IfMatch = None,
) -> Response[TemplateView]:
    user_id = caller_user_id(app.current_event.raw_event)
    return _changed(dependencies().templates.replace, user_id, templateId, body, if_match, "template replaced")


@app.patch("/process-templates/<templateId>", summary="Change a template's name and / or its whole step list")
def patch_template(
    templateId: TemplateId,  # noqa: N803 - the route's name
    body: PatchProcessTemplateDto,
    if_match: IfMatch = None,
) -> Response[TemplateView]:
    user_id = caller_user_id(app.current_event.raw_event)
    return _changed(dependencies().templates.patch, user_id, templateId, body, if_match, "template changed")


def _changed(
    change: Callable[[str, str, ChangeT, Versions | None], ProcessTemplate],
    user_id: str,
    template_id: str,
    body: ChangeT,
    if_match: str | None,
    event: str,
) -> Response[TemplateView]:
    """Run a versioned update (PUT or PATCH: ``change`` is the service's) and answer it; the errors
    both can meet, mapped once."""
    template = change(user_id, template_id, body, _version(if_match))
    metrics.add_metric(name="TemplatesChanged", unit=MetricUnit.Count, value=1)
    logger.info(event, extra={"template_id": template_id, "version": template.version})
    return _current(template)


@app.delete("/process-templates/<templateId>", summary="Delete a template and all its steps (one transaction)")
def delete_template(templateId: TemplateId, if_match: IfMatch = None) -> TemplateDeleted:  # noqa: N803
    user_id = caller_user_id(app.current_event.raw_event)
    template = dependencies().templates.delete(user_id, templateId, _version(if_match))
    metrics.add_metric(name="TemplatesDeleted", unit=MetricUnit.Count, value=1)
    logger.info("template deleted", extra={"template_id": templateId, "steps": len(template.steps)})
    return TemplateDeleted.model_validate({"templateId": templateId, "deletedSteps": len(template.steps)})


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    metrics.add_metric(name="TemplateRequests", unit=MetricUnit.Count, value=1)
    return app.resolve(event, context)
