"""DynamoDB adapter for the nudge user profiles (UsersTable: key userId, GSI TimezoneIndex).

The profile API writes with UpdateItem, never PutItem: ``save`` sets every profile field (and
``createdAt`` once), ``update`` only the fields given, on an existing profile; attributes other
writers add are kept. ``timezone`` is the index's key, so a written profile is in TimezoneIndex
at once and a changed zone moves it there in the same write.

Deletion (``mark_deleting`` -> the user's other data -> ``delete_marked``): the profile is first
marked (``deletingAt``) and loses ``timezone``, which takes it out of TimezoneIndex, so the
scheduler queues the user no more; a marked profile is no profile to every reader (``get``), a
PATCH is refused as if there were none and a PUT with ``ProfileBeingDeleted``, and the generator's
schedule write is refused (``storage.nudges``). The profile item goes last, so a deletion cut short
leaves a marked profile that the next DELETE finds and finishes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from boto3.dynamodb.conditions import Attr, Key
from pydantic import ValidationError

from ..nudges.profile import UserProfile
from ..nudges.profiles import ProfileBeingDeleted
from ..validation_errors import describe_errors
from .dynamodb import ConditionFailed, from_dynamo, guarded, query_pages, table, to_dynamo

TIMEZONE_INDEX = "TimezoneIndex"


class InvalidProfile(ValueError):
    """A stored profile does not validate; the message names the user and the field."""


def profile_from_item(item: dict[str, Any]) -> UserProfile:
    try:
        return UserProfile.model_validate(from_dynamo(item))
    except ValidationError as error:
        fields = ", ".join(describe_errors(error))
        raise InvalidProfile(f"user {item.get('userId')!r} has an invalid profile ({fields})") from None


def profile_item(profile: UserProfile) -> dict[str, Any]:
    """The UsersTable item of a whole profile, as ``put`` writes it."""
    return dict(to_dynamo(profile.model_dump(by_alias=True, mode="json")))


class DynamoUserRepository:
    def __init__(self, table_name: str) -> None:
        self._table = table(table_name)

    def get(self, user_id: str) -> UserProfile | None:
        """The profile; None when there is none or its deletion has begun."""
        item = guarded(lambda: self._table.get_item(Key={"userId": user_id})).get("Item")
        return None if item is None or "deletingAt" in item else profile_from_item(item)

    def put(self, profile: UserProfile) -> None:
        item = profile_item(profile)
        guarded(lambda: self._table.put_item(Item=item))

    def save(self, user_id: str, fields: dict[str, Any], now: str) -> bool:
        """Create or replace the profile's fields; True when it did not exist before.
        ProfileBeingDeleted while a deletion of it is unfinished (it would outlive the deletion)."""
        try:
            response = self._set_fields(
                user_id, fields, now, "attribute_not_exists(deletingAt)", "UPDATED_OLD", stamp_creation=True
            )
        except ConditionFailed:
            raise ProfileBeingDeleted(user_id) from None
        return not response.get("Attributes")

    def update(self, user_id: str, fields: dict[str, Any], now: str) -> UserProfile | None:
        """Change the given fields of an existing profile; None when there is none."""
        try:
            response = self._set_fields(
                user_id, fields, now, "attribute_exists(userId) AND attribute_not_exists(deletingAt)", "ALL_NEW"
            )
        except ConditionFailed:
            return None
        return profile_from_item(response["Attributes"])

    def _set_fields(
        self,
        user_id: str,
        fields: dict[str, Any],
        now: str,
        condition: str,
        returning: str,
        *,
        stamp_creation: bool = False,
    ) -> dict[str, Any]:
        """One UpdateItem that sets ``fields`` and ``updatedAt`` (and ``createdAt``, only the first
        time, with ``stamp_creation``) under ``condition``; ConditionFailed when it does not hold."""
        names, values, assignments = _assignments({**fields, "updatedAt": now})
        if stamp_creation:
            assignments.append("createdAt = if_not_exists(createdAt, :now)")
            values[":now"] = now
        response: dict[str, Any] = guarded(
            lambda: self._table.update_item(
                Key={"userId": user_id},
                UpdateExpression="SET " + ", ".join(assignments),
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues=returning,
            )
        )
        return response

    def mark_deleting(self, user_id: str, now: str) -> bool:
        """Mark the profile for deletion (again, when an earlier deletion was cut short) and take
        it out of TimezoneIndex; False when the user has no profile."""
        try:
            guarded(
                lambda: self._table.update_item(
                    Key={"userId": user_id},
                    UpdateExpression="SET deletingAt = if_not_exists(deletingAt, :now) REMOVE #tz",
                    ConditionExpression="attribute_exists(userId)",
                    ExpressionAttributeNames={"#tz": "timezone"},
                    ExpressionAttributeValues={":now": now},
                )
            )
        except ConditionFailed:
            return False
        return True

    def delete_marked(self, user_id: str) -> bool:
        """Delete the profile, only while it is marked; False when it is already gone."""
        try:
            guarded(
                lambda: self._table.delete_item(
                    Key={"userId": user_id}, ConditionExpression="attribute_exists(deletingAt)"
                )
            )
        except ConditionFailed:
            return False
        return True

    def count_in_timezone(self, timezone: str) -> int:
        """Users in ``timezone`` with nudges on (a Select=COUNT Query: no items travel)."""
        kwargs: dict[str, Any] = {
            "IndexName": TIMEZONE_INDEX,
            "KeyConditionExpression": Key("timezone").eq(timezone),
            "FilterExpression": Attr("nudgesEnabled").ne(False),
            "Select": "COUNT",
        }
        return sum(int(page.get("Count", 0)) for page in query_pages(self._table, kwargs))

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
        for page in query_pages(self._table, kwargs):
            items = page.get("Items", [])
            if items:
                yield [from_dynamo(item) for item in items]


def _assignments(fields: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any], list[str]]:
    """``#fN = :fN`` per field (names are placeholders: ``timezone`` is a reserved word)."""
    names, values, assignments = {}, {}, []
    for index, (name, value) in enumerate(sorted(fields.items())):
        names[f"#f{index}"] = name
        values[f":f{index}"] = to_dynamo(value)
        assignments.append(f"#f{index} = :f{index}")
    return names, values, assignments
