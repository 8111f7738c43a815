"""DynamoDB adapter for process templates (ProcessTemplatesTable;
docs/chat-and-templates.md#resolving-dependson-in-one-transaction).

Items:
- template ``pk=TEMPLATE#<id>, sk=META``: templateId, userId, name, ``nameKey`` (the tolerant
  search key), stepCount, source, createdAt; ``gsi1pk=USER#<userId>``,
  ``gsi1sk=TEMPLATE#<createdAt>#<id>`` put it in GSI1, newest last.
- step ``pk=TEMPLATE#<id>, sk=STEP#<seq:03d>``: stepId, seq, name, basis, offsetDays,
  requiredArtifacts, dependsOn (step ids, already resolved), dependsOnSeq. Steps carry no GSI1
  keys: the index holds templates only.

``create`` writes the template and all its steps in ONE TransactWriteItems, each conditioned on
``attribute_not_exists(pk)``: a refused or failed write leaves nothing, and a template id that
exists is reported (False) instead of being overwritten.

``version`` (1 on create; a template stored before versions existed reads as 1) guards every
change: ``replace`` and ``delete`` are one transaction each whose template item is conditioned on
the owner and on the version the caller read, so two writers never interleave, and a refused
write changes nothing. ``replace`` updates the template item, puts the new steps over the old keys
and deletes the old steps beyond the new count: 1 + max(old, new) <= 51 items. ``delete`` removes
the template item (its GSI1 entry goes with it) and every step. ``names_of`` reads one user's templates
through GSI1 (only the projected name fields are used), so its cost grows with the caller's own
templates, never with other users'. GSI1 is eventually consistent: a template created a moment
ago may be missing from a search for a moment.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from boto3.dynamodb.conditions import Key

from ..templates.models import ProcessTemplate, StepTemplate, TemplateSource
from ..templates.search import NamedTemplate, name_key
from ..templates.validation import TRANSACTION_ITEM_LIMIT
from .dynamodb import (
    ConditionFailed,
    StorageError,
    batch_get,
    from_dynamo,
    guarded,
    table,
    to_dynamo,
    transact_write,
)

INDEX = "GSI1"
META = "META"
MAX_LISTED_TEMPLATES = 2000
PAGE_SIZE = 500


def template_key(template_id: str) -> dict[str, str]:
    return {"pk": f"TEMPLATE#{template_id}", "sk": META}


def template_item(template: ProcessTemplate) -> dict[str, Any]:
    return {
        **template_key(template.template_id),
        "type": "template",
        "templateId": template.template_id,
        "userId": template.user_id,
        "name": template.name,
        "nameKey": name_key(template.name),
        "stepCount": len(template.steps),
        "source": template.source.as_dict(),
        "createdAt": template.created_at,
        "updatedAt": template.updated_at,
        "version": template.version,
        "gsi1pk": f"USER#{template.user_id}",
        "gsi1sk": f"TEMPLATE#{template.created_at}#{template.template_id}",
    }


def step_sk(seq: int) -> str:
    return f"STEP#{seq:03d}"


def _version_condition(expected: int) -> str:
    """The template is the caller's and still at ``expected`` (a template without a version is 1)."""
    if expected == 1:
        return "userId = :user AND (attribute_not_exists(version) OR version = :expected)"
    return "userId = :user AND version = :expected"


def step_item(template_id: str, step: StepTemplate) -> dict[str, Any]:
    return {
        "pk": f"TEMPLATE#{template_id}",
        "sk": step_sk(step.seq),
        "type": "step",
        "templateId": template_id,
        **step.as_dict(),
    }


def _clean(value: Any) -> Any:
    """None-valued map entries dropped (DynamoDB stores them, but they carry nothing)."""
    if isinstance(value, dict):
        return {key: _clean(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_clean(item) for item in value]
    return value


class DynamoTemplateStore:
    """The TemplateRepository port of ``templates.service``."""

    def __init__(self, table_name: str) -> None:
        self._table_name = table_name
        self._table = table(table_name)

    def create(self, template: ProcessTemplate) -> bool:
        items = [template_item(template)] + [step_item(template.template_id, step) for step in template.steps]
        if len(items) > TRANSACTION_ITEM_LIMIT:
            raise StorageError(f"{len(items)} items do not fit one transaction ({TRANSACTION_ITEM_LIMIT})")
        transaction = [
            {
                "Put": {
                    "TableName": self._table_name,
                    "Item": to_dynamo(_clean(item)),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
            for item in items
        ]
        try:
            transact_write(transaction)
        except ConditionFailed:
            return False
        return True

    def get(self, template_id: str) -> ProcessTemplate | None:
        items: list[dict[str, Any]] = []
        query: dict[str, Any] = {
            "KeyConditionExpression": Key("pk").eq(f"TEMPLATE#{template_id}"),
            "ConsistentRead": True,
        }
        for _ in range(TRANSACTION_ITEM_LIMIT):  # one page holds a whole template; bounded anyway
            page = guarded(lambda: self._table.query(**query))
            items += [from_dynamo(item) for item in page.get("Items", [])]
            if "LastEvaluatedKey" not in page:
                break
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        meta = next((item for item in items if item.get("sk") == META), None)
        if meta is None:
            return None
        steps = sorted((item for item in items if item.get("type") == "step"), key=lambda item: int(item["seq"]))
        source = meta.get("source") or {}
        return ProcessTemplate(
            template_id=template_id,
            user_id=str(meta["userId"]),
            name=str(meta["name"]),
            created_at=str(meta.get("createdAt", "")),
            version=int(meta.get("version", 1)),
            updated_at=None if meta.get("updatedAt") is None else str(meta["updatedAt"]),
            source=TemplateSource(source.get("kind", "dto"), source.get("sessionId"), source.get("draftSeq")),
            steps=[
                StepTemplate(
                    step_id=str(step["stepId"]),
                    seq=int(step["seq"]),
                    name=str(step["name"]),
                    basis=step["basis"],
                    offset_days=int(step["offsetDays"]),
                    required_artifacts=[
                        {"kind": a.get("kind"), "description": a.get("description")}
                        for a in step.get("requiredArtifacts") or []
                    ],
                    depends_on=[str(d) for d in step.get("dependsOn") or []],
                    depends_on_seq=[int(d) for d in step.get("dependsOnSeq") or []],
                )
                for step in steps
            ],
        )

    def replace(self, template: ProcessTemplate, previous: ProcessTemplate, steps_changed: bool) -> bool:
        """Store ``template`` (version ``previous.version + 1``) over ``previous`` in one transaction;
        False when the template changed since ``previous`` was read (or is not the owner's)."""
        values = {
            ":name": template.name,
            ":key": name_key(template.name),
            ":count": len(template.steps),
            ":now": template.updated_at,
            ":version": template.version,
            ":user": template.user_id,
            ":expected": previous.version,
        }
        transaction: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self._table_name,
                    "Key": template_key(template.template_id),
                    "UpdateExpression": "SET #name = :name, nameKey = :key, stepCount = :count, "
                    "updatedAt = :now, version = :version",
                    "ConditionExpression": _version_condition(previous.version),
                    "ExpressionAttributeNames": {"#name": "name"},
                    "ExpressionAttributeValues": values,
                }
            }
        ]
        if steps_changed:
            transaction += [
                {"Put": {"TableName": self._table_name, "Item": to_dynamo(_clean(step_item(template.template_id, s)))}}
                for s in template.steps
            ]
            kept = {step.seq for step in template.steps}
            transaction += [
                {"Delete": {"TableName": self._table_name, "Key": self._step_key(template.template_id, step.seq)}}
                for step in previous.steps
                if step.seq not in kept
            ]
        try:
            transact_write(transaction)
        except ConditionFailed:
            return False
        return True

    def delete(self, template: ProcessTemplate) -> bool:
        """Delete the template and every step in one transaction; False when it changed since
        ``template`` was read (or is not the owner's)."""
        transaction: list[dict[str, Any]] = [
            {
                "Delete": {
                    "TableName": self._table_name,
                    "Key": template_key(template.template_id),
                    "ConditionExpression": _version_condition(template.version),
                    "ExpressionAttributeValues": {":user": template.user_id, ":expected": template.version},
                }
            }
        ]
        transaction += [
            {"Delete": {"TableName": self._table_name, "Key": self._step_key(template.template_id, step.seq)}}
            for step in template.steps
        ]
        try:
            transact_write(transaction)
        except ConditionFailed:
            return False
        return True

    def detach_chat_session(self, user_id: str, session_id: str, template_ids: Sequence[str]) -> int:
        """Remove ``source.sessionId`` / ``draftSeq`` from those of ``template_ids`` that are the
        user's and name the session; returns how many. Read by key (consistent), not via GSI1,
        so a template created a moment ago is found too."""
        keys = [template_key(template_id) for template_id in dict.fromkeys(template_ids)]
        detached = 0
        for raw in batch_get(self._table_name, keys):
            item = from_dynamo(raw)
            if item.get("userId") != user_id or (item.get("source") or {}).get("sessionId") != session_id:
                continue
            try:
                guarded(
                    lambda: self._table.update_item(
                        Key=template_key(str(item["templateId"])),  # noqa: B023
                        UpdateExpression="REMOVE #source.sessionId, #source.draftSeq",
                        ConditionExpression="userId = :user AND #source.sessionId = :session",
                        ExpressionAttributeNames={"#source": "source"},
                        ExpressionAttributeValues={":user": user_id, ":session": session_id},
                    )
                )
            except ConditionFailed:
                continue  # deleted or detached meanwhile: nothing names the session any more
            detached += 1
        return detached

    def _step_key(self, template_id: str, seq: int) -> dict[str, str]:
        return {"pk": f"TEMPLATE#{template_id}", "sk": step_sk(seq)}

    def names_of(self, user_id: str) -> list[NamedTemplate]:
        found: list[NamedTemplate] = []
        query: dict[str, Any] = {
            "IndexName": INDEX,
            "KeyConditionExpression": Key("gsi1pk").eq(f"USER#{user_id}"),
            "ScanIndexForward": False,
            "Limit": PAGE_SIZE,
            "ProjectionExpression": "templateId, #name, nameKey, createdAt, stepCount",
            "ExpressionAttributeNames": {"#name": "name"},
        }
        while len(found) < MAX_LISTED_TEMPLATES:
            page = guarded(lambda: self._table.query(**query))
            for raw in page.get("Items", []):
                item = from_dynamo(raw)
                name = str(item.get("name", ""))
                found.append(
                    NamedTemplate(
                        template_id=str(item.get("templateId", "")),
                        name=name,
                        created_at=str(item.get("createdAt", "")),
                        step_count=int(item.get("stepCount", 0)),
                        key=str(item.get("nameKey") or name_key(name)),
                    )
                )
            if "LastEvaluatedKey" not in page:
                break
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return found[:MAX_LISTED_TEMPLATES]
