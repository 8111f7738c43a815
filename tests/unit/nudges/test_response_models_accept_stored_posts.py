"""Class: an answer model must accept everything the generator may store, or one stored post
breaks every page that holds it (a TikTok ``tone`` outside the app nudges' tone list did, for the
30 days the post lives).

Posts are drawn from the Commander's output model itself (``support.model_strategies``), stored
as the generator stores them (``ScheduleRecord`` -> ``post_item``), read back as the pending query
presents them, and validated by the pending endpoints' answer models. Legacy posts (stored before
the output model, any JSON) go the same way.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from lambda_agents.nudges.pending import present
from lambda_agents.nudges.pending_api import PendingTiktokPost, PendingXPost, TiktokPendingPage, XPendingPage
from lambda_agents.nudges.records import PostRecord, ScheduleRecord
from lambda_agents.nudges.schema import TiktokPost, XPost
from lambda_agents.storage.nudges import post_item

from tests.support.model_strategies import for_annotation, valid_instances

ANSWER = {"tiktok": (PendingTiktokPost, TiktokPendingPage, "tiktokPosts"), "x": (PendingXPost, XPendingPage, "xPosts")}
JSON = for_annotation(Any)


def schedule(tiktok: list[dict[str, Any]], x: list[dict[str, Any]]) -> ScheduleRecord:
    return ScheduleRecord(
        user_id="u1",
        local_date="2026-02-02",
        timezone="Asia/Tokyo",
        language="ja",
        app_version="1",
        slot_table=[],
        agent_raw_output={"tiktokPosts": tiktok, "xPosts": x},
        fallback_used=False,
        fallback_reason=None,
        attempts=[],
        usage={},
        model="m",
        created_at="2026-02-02T00:00:00+00:00",
    )


def answer_of(post: PostRecord) -> bool:
    """Whether the post is pending (and so was answered and checked); a disabled one never is."""
    item = post_item(post, "2026-02-02T00:00:00+00:00", 30)
    if "pendingKey" not in item:
        return False
    post_model, page_model, key = ANSWER[post.platform]
    shaped = present(post.platform, item)
    post_model.model_validate(shaped)
    page_model.model_validate({key: [shaped], "count": 1, "nextToken": None})
    return True


@settings(max_examples=150, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(st.lists(valid_instances(TiktokPost), max_size=2), st.lists(valid_instances(XPost), max_size=2))
def test_property_every_post_the_output_model_accepts_is_answered_by_the_pending_models(
    tiktok: list[dict[str, Any]], x: list[dict[str, Any]]
) -> None:
    posts = schedule(tiktok, x).posts()
    assume(any(post.enabled for post in posts))  # an example with a pending post
    answered = [answer_of(post) for post in posts]
    assert any(answered)  # each example checks at least one stored post against the answer models


@settings(max_examples=150)
@given(
    st.sampled_from(["tiktok", "x"]),
    st.sampled_from(["morning", "evening"]),
    st.dictionaries(
        st.sampled_from(["caption", "hashtags", "tone", "reasoning", "slot", "text", "enabled", "other"]), JSON
    ),
)
def test_property_any_legacy_post_is_answered_by_the_pending_models(
    platform: str, slot: str, fields: dict[str, Any]
) -> None:
    fields.pop("enabled", None)  # legacy: no enabled field, so pending
    assert answer_of(PostRecord(f"{platform}-p1", platform, "u1", "2026-02-02", slot, fields))  # type: ignore[arg-type]


def test_given_a_stored_tiktok_tone_outside_the_app_nudge_tones_then_the_page_answers() -> None:
    post = TiktokPost.model_validate(
        {"slot": "morning", "caption": "c", "hashtags": [], "tone": "warm", "reasoning": "r", "enabled": True}
    )
    (record,) = schedule([post.model_dump(by_alias=True)], []).posts()
    assert answer_of(record)
