"""The tolerant search (docs/chat-and-templates.md#search-and-similar): a near-duplicate name is found despite
width, kana, case, spacing and punctuation differences; unrelated names are not."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lambda_agents.templates.search import DEFAULT_THRESHOLD, NamedTemplate, name_key, rank, similarity


def named(name: str, created: str = "2026-01-01", template_id: str | None = None) -> NamedTemplate:
    return NamedTemplate(template_id or name, name, created, 3, name_key(name))


@pytest.mark.parametrize(
    ("typed", "stored"),
    [
        ("ﾁｪｯｸﾘｽﾄ作成", "チェックリスト作成"),  # half-width katakana
        ("ちぇっくりすと作成", "チェックリスト作成"),  # hiragana for katakana
        ("ＡＢＣ社 監査", "abc社監査"),  # full-width letters, case, spacing
        ("採用・面接 フロー", "採用面接フロー"),  # punctuation and spaces
        ("ＰＲＯＪＥＣＴ　Ｘ", "project-x"),
        ("Ｑ１決算", "q1決算"),
    ],
)
def test_given_a_differently_typed_name_then_the_keys_are_equal(typed: str, stored: str) -> None:
    assert name_key(typed) == name_key(stored)
    assert similarity(name_key(typed), name_key(stored)) == 1.0


def test_given_templates_then_near_duplicates_rank_first_and_unrelated_ones_are_left_out() -> None:
    templates = [
        named("中途採用のプロセス", "2026-01-01"),
        named("中途採用プロセス（エンジニア）", "2026-01-03"),
        named("新卒採用のプロセス", "2026-01-02"),
        named("決算監査", "2026-01-04"),
    ]
    hits = rank("中途採用 ﾌﾟﾛｾｽ", templates, limit=10)
    assert [hit.template.name for hit in hits][:2] == ["中途採用プロセス（エンジニア）", "中途採用のプロセス"]
    assert "決算監査" not in [hit.template.name for hit in hits]
    assert all(hit.score >= DEFAULT_THRESHOLD for hit in hits)
    assert hits == sorted(hits, key=lambda hit: -hit.score)


def test_given_equal_scores_then_the_newest_comes_first_and_the_limit_holds() -> None:
    templates = [named("月次決算", "2026-01-01", "old"), named("月次決算", "2026-03-01", "new")]
    assert [hit.template.template_id for hit in rank("月次 決算", templates, 1)] == ["new"]


def test_given_a_query_of_only_spaces_or_punctuation_then_nothing_matches() -> None:
    assert rank(" ・ ", [named("月次決算")], 10) == []


TEXT = st.text(alphabet=st.characters(codec="utf-8", blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_name_key_is_idempotent_and_ignores_width_and_spacing(text: str) -> None:
    key = name_key(text)
    assert name_key(key) == key
    assert name_key(" ".join(text)) == key
    assert name_key(unicodedata.normalize("NFKC", text)) == key


@settings(max_examples=300, deadline=None)
@given(TEXT, TEXT)
def test_similarity_is_a_symmetric_score_between_zero_and_one(left: str, right: str) -> None:
    a, b = name_key(left), name_key(right)
    score = similarity(a, b)
    assert 0.0 <= score <= 1.0
    assert score == similarity(b, a)
    assert (score == 1.0) == (a == b and a != "")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0x30A1, max_codepoint=0x30F6), min_size=1, max_size=20))
def test_katakana_and_its_hiragana_and_half_width_forms_share_a_key(katakana: str) -> None:
    hiragana = "".join(chr(ord(char) - 0x60) for char in katakana)
    assert name_key(katakana) == name_key(hiragana)
