"""What a generation run stores: one schedule per user and local date, one record per post.

The schedule keeps the slot table, the raw agent output (``agentRawOutput``;
docs/nudges.md#what-is-stored-where), whether the fallback was used and why, the attempts with their
finish_reason, the tokens and the model. Each TikTok / X post is also its own record so the
pending endpoints can read just the pending ones (see ``storage/nudges.py``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Literal

Platform = Literal["tiktok", "x"]
PLATFORMS: tuple[Platform, Platform] = ("tiktok", "x")
# The two posts a platform gets per day (the Commander's schema asks for one of each).
PostSlot = Literal["morning", "evening"]
POST_SLOTS: tuple[PostSlot, PostSlot] = ("morning", "evening")
_POST_ID_NAMESPACE = uuid.UUID("4f1b7a52-8a56-4c36-9c1e-5a3c1d0e9b21")


def schedule_id(user_id: str, local_date: str) -> str:
    return f"{user_id}#{local_date}"


def post_id(platform: Platform, user_id: str, local_date: str, slot: str) -> str:
    """Deterministic, so a retried write of the same schedule names the same posts."""
    return f"{platform}-{uuid.uuid5(_POST_ID_NAMESPACE, f'{platform}|{user_id}|{local_date}|{slot}').hex}"


def is_enabled(post: dict[str, Any]) -> bool:
    """The pending filter ``enabled !== false`` (docs/nudges.md#never-a-fallback-post): a legacy post without the
    field counts."""
    return post.get("enabled") is not False


class ProfileGone(LookupError):
    """The user's profile was deleted, or its deletion began, while their day was generated:
    the schedule is not stored."""


@dataclass(frozen=True)
class PostRecord:
    post_id: str
    platform: Platform
    user_id: str
    local_date: str
    slot: str
    fields: dict[str, Any]  # the post's fields as the agent wrote them (enabled included if present)

    @property
    def enabled(self) -> bool:
        return is_enabled(self.fields)


@dataclass(frozen=True)
class ScheduleRecord:
    user_id: str
    local_date: str
    timezone: str
    language: str
    app_version: str
    slot_table: list[dict[str, Any]]
    agent_raw_output: dict[str, Any]
    fallback_used: bool
    fallback_reason: str | None
    attempts: list[dict[str, Any]]
    usage: dict[str, int]
    model: str
    created_at: str
    # The plan's record (llm.accounting.ModelAccount.as_dict): model, prompt version, tokens, billing, cost.
    account: dict[str, Any] | None = None

    @property
    def schedule_id(self) -> str:
        return schedule_id(self.user_id, self.local_date)

    def posts(self) -> list[PostRecord]:
        return post_records(self.user_id, self.local_date, self.agent_raw_output)


def post_records(user_id: str, local_date: str, agent_raw_output: Any) -> list[PostRecord]:
    """Every post of a schedule's output, each with its own id, whatever the output's shape.

    Ids are deterministic (a retried write names the same posts). A second post with the same
    platform and slot (possible in legacy rows; the output model forbids it) gets the slot's id
    with ``#2``, ``#3``... so no post is ever dropped for sharing a slot.
    """
    output = agent_raw_output if isinstance(agent_raw_output, dict) else {}
    records = []
    platforms: tuple[tuple[Platform, str], ...] = (("tiktok", "tiktokPosts"), ("x", "xPosts"))
    for platform, key in platforms:
        seen: dict[str, int] = {}
        entries = output.get(key)
        for raw in entries if isinstance(entries, list) else []:
            fields = dict(raw) if isinstance(raw, dict) else {"value": raw}
            slot = str(fields.get("slot", ""))
            seen[slot] = seen.get(slot, 0) + 1
            name = slot if seen[slot] == 1 else f"{slot}#{seen[slot]}"
            records.append(
                PostRecord(post_id(platform, user_id, local_date, name), platform, user_id, local_date, slot, fields)
            )
    return records
