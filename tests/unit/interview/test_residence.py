"""The Greeter (docs/interview.md#languages-and-residence): the time zone is inferred from the
country (Asia/Tokyo when it cannot be); the country is read as a code or a name; the language as a
code or a known name."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lambda_agents.interview.locales.languages import InvalidLanguage, normalise_language, reply_language
from lambda_agents.interview.locales.residence import (
    FALLBACK_TIMEZONE,
    infer_timezone,
    resolve_country,
    timezone_for_country,
)
from lambda_agents.timezones import is_timezone


@pytest.mark.parametrize(
    ("country", "zone"),
    [
        ("JP", "Asia/Tokyo"),
        ("jp", "Asia/Tokyo"),
        ("日本", "Asia/Tokyo"),
        ("Japan", "Asia/Tokyo"),
        ("ベトナム", "Asia/Ho_Chi_Minh"),
        ("Vietnam", "Asia/Ho_Chi_Minh"),
        ("FR", "Europe/Paris"),
        ("Nepal", "Asia/Kathmandu"),
        ("Iceland", "Atlantic/Reykjavik"),
    ],
)
def test_given_a_single_zone_country_when_inferred_then_its_zone_is_set(country: str, zone: str) -> None:
    choice = infer_timezone(country)
    assert (choice.timezone, choice.source) == (zone, "country")


@pytest.mark.parametrize(
    ("country", "zone"),
    [
        ("US", "America/New_York"),
        ("アメリカ", "America/New_York"),
        ("Canada", "America/Toronto"),
        ("Australia", "Australia/Sydney"),
        ("Brazil", "America/Sao_Paulo"),
        ("Russia", "Europe/Moscow"),
        ("Indonesia", "Asia/Jakarta"),
    ],
)
def test_given_a_multi_zone_country_then_the_documented_capital_zone_is_the_default(country: str, zone: str) -> None:
    assert infer_timezone(country).timezone == zone


def test_given_a_multi_zone_country_without_an_explicit_default_then_tzdatas_first_zone_is_taken() -> None:
    assert timezone_for_country("EC") == "America/Guayaquil"
    assert timezone_for_country("PS") in {"Asia/Gaza", "Asia/Hebron"}


@pytest.mark.parametrize("country", ["Atlantis", "ZZ", "", None, "月面"])
def test_given_a_country_that_cannot_be_mapped_then_asia_tokyo_is_the_fallback(country: str | None) -> None:
    choice = infer_timezone(country)
    assert (choice.timezone, choice.source) == (FALLBACK_TIMEZONE, "fallback")


def test_given_a_zone_the_applicant_stated_then_it_wins_over_the_countrys_default() -> None:
    assert infer_timezone("US", " America/Los_Angeles").timezone == "America/Los_Angeles"
    assert infer_timezone("US", "America/Los_Angeles").source == "stated"


@pytest.mark.parametrize(
    "stated",
    ["Mars/Olympus", "../../etc/passwd", "", "Tokyo", "/etc/localtime", "America", "Etc", "posix/Asia/Tokyo"],
)
def test_given_a_stated_zone_that_is_not_an_iana_zone_then_the_country_decides(stated: str) -> None:
    assert infer_timezone("FR", stated).timezone == "Europe/Paris"


def test_given_codes_names_and_unknown_text_when_resolved_then_codes_are_stored_when_known() -> None:
    assert resolve_country("United Kingdom").code == "GB"
    assert resolve_country("UK").code == "GB"
    assert resolve_country("韓国").code == "KR"
    assert resolve_country("South Korea").code == "KR"
    unknown = resolve_country("  Atlantis ")
    assert (unknown.code, unknown.name) == (None, "Atlantis")


ZONE_LIKE = st.sampled_from(["America", "Asia", "Etc", "posix", "right/Asia/Tokyo", "Asia/Tokyo", "America/"])


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.none(), st.text(max_size=40)), st.one_of(st.none(), st.text(max_size=40), ZONE_LIKE))
def test_property_inference_never_raises_and_always_gives_a_loadable_zone(
    country: str | None, stated: str | None
) -> None:
    choice = infer_timezone(country, stated)
    assert is_timezone(choice.timezone)
    ZoneInfo(choice.timezone)
    assert choice.source in {"stated", "country", "fallback"}


@pytest.mark.parametrize(
    ("given", "tag"),
    [("ja", "ja"), ("JA", "ja"), ("Japanese", "ja"), ("日本語", "ja"), ("pt_BR", "pt-br"), ("en", "en")],
)
def test_given_a_code_or_a_known_name_when_the_language_is_set_then_a_tag_is_stored(given: str, tag: str) -> None:
    assert normalise_language(given) == tag


@pytest.mark.parametrize("given", ["Klingon language", "", "123", "j"])
def test_given_neither_a_code_nor_a_known_name_then_the_model_is_told_to_send_a_code(given: str) -> None:
    with pytest.raises(InvalidLanguage, match="ISO 639-1"):
        normalise_language(given)


def test_the_systems_own_messages_follow_the_session_language_else_the_applicants_script() -> None:
    assert reply_language("ja", "hello") == "ja"
    assert reply_language("pt-br", "こんにちは") == "en"
    assert reply_language(None, "こんにちは") == "ja"
    assert reply_language(None, "hello") == "en"
