"""X's weighted length (twitter-text configuration v3) and the X post model that uses it.

The cases marked "conformance" are twitter-text's own (conformance/validate.yml,
WeightedTweetsWithDiscountedEmojiCounterTest). Where X merges an emoji sequence into one weight
of 2, this implementation counts the sequence's code points, which is never less: those cases
assert ``>=``, every other one the exact figure.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lambda_agents.nudges.schema import XPost
from lambda_agents.nudges.x_text import MAX_WEIGHTED_LENGTH, weighted_length, x_text_problem
from pydantic import ValidationError

from tests.support.branches import Branches

CJK_160 = (
    "故人西辞黄鹤楼，烟花三月下扬州。孤帆远影碧空尽，唯见长江天际流。朱雀桥边野草花，乌衣巷口夕阳斜。旧时王谢堂前燕，"
    "飞入寻常百姓家。朝辞白帝彩云间，千里江陵一日还。两岸猿声啼不住，轻舟已过万重山。泪湿罗巾梦不成，夜深前殿按歌声。"
    "红颜未老恩先断，斜倚薰笼坐到明。独在异乡为异客，每逢佳节倍思亲。遥知兄弟登高处，遍插茱萸少一人。"
)
LONG_LABEL = "somesuperlongurl" * 5  # 80 characters: not a valid domain label (63 at most)
EXACT = [
    ("Hi http://test.co", 26),  # conformance: a URL weighs 23
    ("http://test.co", 23),  # conformance
    ("285 chars-" + "xxxxxxxxxx-" * 25, 285),  # conformance: Latin weighs 1
    ("https://www.twitter.com/aloha " * 10, 240),  # conformance
    (CJK_160, 320),  # conformance: CJK weighs 2
    ("the" + CJK_160, 323),  # conformance
    ("😷" * 160, 320),  # conformance: an emoji outside the BMP weighs 2
    ("😷👾😡🔥💩", 10),  # conformance
    (
        "This is a tweet with general punctuation characters: \u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
        "\u2008\u2009\u200a\u200b ‐ ‑ ‒ – — ― ‖  ‗ ‘ ’ ‚ ‛ “ ” „ ‟ ′ ″ ‴ ‵ ‶ ‷",
        110,
    ),  # conformance: the light punctuation ranges weigh 1
    ("randomurlrandomurlrandomurlrandomurlrandomurlrandomurlrandomurls.com", 68),  # conformance: 64-char domain
    ("ABC\u202a\uffffABC\ufffe", 12),  # conformance
    (f"see https://{LONG_LABEL}.com/foo and https://validurl.com", 4 + 8 + 80 + 8 + 5 + 23),  # invalid label
    ("あ" * 140, 280),
    ("今日も一歩前へ https://example.com/abc。次", 14 + 1 + 23 + 4),  # the URL ends before 。
    ("x https://example.com/path) y", 28),  # the closing parenthesis is the sentence's
    ("see example.com.", 28),
    ("日本語example.com", 29),
    ("https://例え.jp/abc", 23),  # an internationalised host
    ("©", 2),  # X counts (c) and (R) as emoji
    ("http://localhost", 16),  # no domain: characters
    ("3.14 e.g. v1.2", 14),  # not domains
    ("#習慣化 @user", 13),
    ("\r\n", 1),  # one line break, as X normalises it
]
AT_LEAST = [
    ("H🐱☺👨‍👩‍👧‍👦", 7),  # conformance: X merges the ZWJ family into 2
    ("🙋🏽👨‍🎤", 4),  # conformance
    ("1⃣", 2),  # conformance
    ("Unicode 10.0 emoji: 🤪; 🧕; 🧕🏾; 🏴󠁧󠁢󠁥󠁮󠁧󠁿", 34),  # conformance
    ("Unicode 9.0 emoji: 🤠; 💃; 💃🏾", 29),  # conformance
    ("❤️", 2),
    ("t.co", 23),  # a domain without protocol: X counts 23 when its list knows the TLD, else the characters
    ("a@example.com", 13),
]


@pytest.mark.parametrize(("text", "expected"), EXACT)
def test_given_twitter_text_cases_then_the_weighted_length_is_x_s(text: str, expected: int) -> None:
    assert weighted_length(text) == expected


@pytest.mark.parametrize(("text", "x_count"), AT_LEAST)
def test_given_emoji_sequences_or_unknown_domains_then_the_count_is_never_below_x_s(text: str, x_count: int) -> None:
    assert weighted_length(text) >= x_count


WORDS = st.sampled_from(
    [
        "今日も",
        "一歩",
        "前へ",
        "Take",
        "breath",
        "#習慣化",
        "@user",
        "😷",
        "✨",
        "한국어",
        "Привет",
        "ñandú",
        "3.14",
        "https://example.com",
        "https://www.nhk.or.jp/news/",
        "example.com",
        "https://example.com/path?q=1&x=2",
    ]
)


@given(st.lists(WORDS, min_size=1, max_size=12))
def test_property_words_separated_by_spaces_add_up(words: list[str]) -> None:
    assert weighted_length(" ".join(words)) == sum(map(weighted_length, words)) + len(words) - 1


@given(st.text(alphabet=st.characters(min_codepoint=0x3040, max_codepoint=0x9FFF), max_size=200))
def test_property_every_japanese_or_chinese_character_weighs_two(text: str) -> None:
    assert weighted_length(text) == 2 * len(text)


def test_property_never_less_than_one_per_character_outside_urls() -> None:
    reached = Branches()

    @given(st.text(max_size=300))
    def example(text: str) -> None:
        if "." in text:  # a domain: a URL may weigh less than its characters
            reached.add("maybe a URL")
            return
        reached.add("no URL")
        assert weighted_length(text) >= len(text.replace("\r\n", "\n"))

    example()
    reached.assert_all("no URL")


def x_post(text: str) -> dict[str, Any]:
    return {"slot": "morning", "text": text, "reasoning": "r", "enabled": True}


def test_given_141_japanese_characters_then_the_x_post_is_refused_though_shorter_than_280() -> None:
    with pytest.raises(ValidationError, match="282 by X's count"):
        XPost.model_validate(x_post("あ" * 141))


def test_given_140_japanese_characters_then_the_x_post_is_accepted() -> None:
    assert XPost.model_validate(x_post("あ" * 140)).text == "あ" * 140


@pytest.mark.parametrize(("text", "problem"), [(" ", "empty"), ("a\ufffeb", "U+FFFE")])
def test_given_text_x_refuses_then_the_problem_is_named(text: str, problem: str) -> None:
    assert problem in (x_text_problem(text) or "")


def test_the_limit_is_x_s() -> None:
    assert MAX_WEIGHTED_LENGTH == 280
