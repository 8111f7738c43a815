"""DynamoDB adapter for the nudge user profiles (UsersTable: key userId, GSI TimezoneIndex).

The profile API writes with UpdateItem, never PutItem: ``save`` sets every profile field (and
``createdAt`` once), ``update`` only the fields given, on an existing profile; attributes other
writers add are kept. ``timezone`` is the index's key, so a written profile is in TimezoneIndex
at once and a changed zone moves it there in the same write.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from boto3.dynamodb.conditions import Attr, Key
from pydantic import ValidationError

from ..nudges.profile import UserProfile
from ..validation_errors import describe_errors
from .dynamodb import ConditionFailed, from_dynamo, guarded, table, to_dynamo

TIMEZONE_INDEX = "TimezoneIndex"


class InvalidProfile(ValueError):
    """A stored profile does not validate; the message names the user and the field."""


def profile_from_item(item: dict[str, Any]) -> UserProfile:
    try:
        return UserProfile.model_validate(from_dynamo(item))
    except ValidationError as error:
        fields = ", ".join(describe_errors(error))
        raise InvalidProfile(f"user {item.get('userId')!r} has an invalid profile ({fields})") from None


class DynamoUserRepository:
    def __init__(self, table_name: str) -> None:
        self._table = table(table_name)

    def get(self, user_id: str) -> UserProfile | None:
        item = guarded(lambda: self._table.get_item(Key={"userId": user_id})).get("Item")
        return None if item is None else profile_from_item(item)

    def put(self, profile: UserProfile) -> None:
        item = to_dynamo(profile.model_dump(by_alias=True, mode="json"))
        guarded(lambda: self._table.put_item(Item=item))

    def save(self, user_id: str, fields: dict[str, Any], now: str) -> bool:
        """Create or replace the profile's fields; True when it did not exist before."""
        names, values, assignments = _assignments({**fields, "updatedAt": now})
        assignments.append("createdAt = if_not_exists(createdAt, :now)")
        response = guarded(
            lambda: self._table.update_item(
                Key={"userId": user_id},
                UpdateExpression="SET " + ", ".join(assignments),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={**values, ":now": now},
                ReturnValues="UPDATED_OLD",
            )
        )
        return not response.get("Attributes")

    def update(self, user_id: str, fields: dict[str, Any], now: str) -> UserProfile | None:
        """Change the given fields of an existing profile; None when there is none."""
        names, values, assignments = _assignments({**fields, "updatedAt": now})
        try:
            response = guarded(
                lambda: self._table.update_item(
                    Key={"userId": user_id},
                    UpdateExpression="SET " + ", ".join(assignments),
                    ConditionExpression="attribute_exists(userId)",
                    ExpressionAttributeNames=names,
                    ExpressionAttributeValues=values,
                    ReturnValues="ALL_NEW",
                )
            )
        except ConditionFailed:
            return None
        return profile_from_item(response["Attributes"])

    def pages_in_timezone(self, timezone: str, page_size: int = 500) -> Iterator[list[dict[str, Any]]]:
        """Raw items of users in ``timezone`` with nudges on, one page per Query."""
        kwargs: dict[str, Any] = {
            "IndexName": TIMEZONE_INDEX,
            "KeyConditionExpression": Key("timezone").eq(timezone),
            "FilterExpression": Attr("nudgesEnabled").ne(False),
            "ProjectionExpression": "userId, #tz, nudgesEnabled",
            "ExpressionAttributeNames": {"#tz": "timezone"},
            "Limit": page_size,
        }
        while True:
            page = guarded(lambda: self._table.query(**kwargs))
            items = page.get("Items", [])
            if items:
                yield [from_dynamo(item) for item in items]
            last = page.get("LastEvaluatedKey")
            if not last:
                return
            kwargs["ExclusiveStartKey"] = last


def _assignments(fields: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any], list[str]]:
    """``#fN = :fN`` per field (names are placeholders: ``timezone`` is a reserved word)."""
    names, values, assignments = {}, {}, []
    for index, (name, value) in enumerate(sorted(fields.items())):
        names[f"#f{index}"] = name
        values[f":f{index}"] = to_dynamo(value)
        assignments.append(f"#f{index} = :f{index}")
    return names, values, assignments
