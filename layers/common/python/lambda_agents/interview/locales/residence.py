"""The applicant's country and time zone (the Greeter's set_country, set_timezone:
docs/interview.md#languages-and-residence).

Countries are read as ISO 3166-1 alpha-2 codes or names (English names from tzdata's
``iso3166.tab``, common aliases, Japanese names). The time zone is inferred from the country:

- a country with one zone in tzdata's ``zone.tab`` gets that zone;
- a country with several gets its capital's zone where the table below names it (US ->
  America/New_York, CA -> America/Toronto, AU -> Australia/Sydney, BR -> America/Sao_Paulo,
  RU -> Europe/Moscow, ...), otherwise the first zone ``zone.tab`` lists for it;
- a zone the applicant stated (an IANA name) wins when it exists;
- anything else (an unknown country, no country) falls back to Asia/Tokyo.

tzdata is a runtime dependency, so the tables ship with the layer; if they could not be read,
the small explicit tables still answer and the rest falls back to Asia/Tokyo.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

from ...timezones import is_timezone

FALLBACK_TIMEZONE = "Asia/Tokyo"

CAPITAL_ZONES = {
    "US": "America/New_York",
    "CA": "America/Toronto",
    "AU": "Australia/Sydney",
    "BR": "America/Sao_Paulo",
    "RU": "Europe/Moscow",
    "MX": "America/Mexico_City",
    "ID": "Asia/Jakarta",
    "CN": "Asia/Shanghai",
    "KZ": "Asia/Almaty",
    "AR": "America/Argentina/Buenos_Aires",
    "CL": "America/Santiago",
    "ES": "Europe/Madrid",
    "PT": "Europe/Lisbon",
    "DE": "Europe/Berlin",
    "UA": "Europe/Kyiv",
    "UZ": "Asia/Tashkent",
    "MN": "Asia/Ulaanbaatar",
    "MY": "Asia/Kuala_Lumpur",
    "NZ": "Pacific/Auckland",
    "EC": "America/Guayaquil",
    "CD": "Africa/Kinshasa",
    "FM": "Pacific/Pohnpei",
    "KI": "Pacific/Tarawa",
    "PF": "Pacific/Tahiti",
    "PG": "Pacific/Port_Moresby",
    "GL": "America/Nuuk",
    "CY": "Asia/Nicosia",
    "MH": "Pacific/Majuro",
}

# Single-zone countries applicants name most often: answers even without tzdata's tables.
COMMON_ZONES = {
    "JP": "Asia/Tokyo",
    "KR": "Asia/Seoul",
    "TW": "Asia/Taipei",
    "HK": "Asia/Hong_Kong",
    "GB": "Europe/London",
    "FR": "Europe/Paris",
    "IT": "Europe/Rome",
    "IN": "Asia/Kolkata",
    "VN": "Asia/Ho_Chi_Minh",
    "PH": "Asia/Manila",
    "TH": "Asia/Bangkok",
    "SG": "Asia/Singapore",
    "NP": "Asia/Kathmandu",
    "MM": "Asia/Yangon",
    "BD": "Asia/Dhaka",
    "LK": "Asia/Colombo",
    "PK": "Asia/Karachi",
    "KH": "Asia/Phnom_Penh",
    "NL": "Europe/Amsterdam",
    "IE": "Europe/Dublin",
}

ALIASES = {
    # English
    "usa": "US", "us": "US", "u.s.": "US", "u.s.a.": "US", "america": "US", "united states": "US",
    "united states of america": "US", "uk": "GB", "u.k.": "GB", "united kingdom": "GB", "britain": "GB",
    "great britain": "GB", "england": "GB", "scotland": "GB", "wales": "GB", "northern ireland": "GB",
    "south korea": "KR", "korea": "KR", "republic of korea": "KR", "north korea": "KP", "vietnam": "VN",
    "viet nam": "VN", "russia": "RU", "russian federation": "RU", "czechia": "CZ", "turkey": "TR",
    "turkiye": "TR", "taiwan": "TW", "hong kong": "HK", "macau": "MO", "macao": "MO", "iran": "IR",
    "syria": "SY", "laos": "LA", "bolivia": "BO", "venezuela": "VE", "tanzania": "TZ", "moldova": "MD",
    "holland": "NL", "the netherlands": "NL", "uae": "AE", "united arab emirates": "AE", "burma": "MM",
    "ivory coast": "CI", "cote d'ivoire": "CI", "palestine": "PS", "vatican": "VA", "brunei": "BN",
    # Japanese
    "日本": "JP", "日本国": "JP", "アメリカ": "US", "アメリカ合衆国": "US", "米国": "US", "中国": "CN",
    "中華人民共和国": "CN", "韓国": "KR", "大韓民国": "KR", "台湾": "TW", "香港": "HK", "イギリス": "GB",
    "英国": "GB", "フランス": "FR", "ドイツ": "DE", "イタリア": "IT", "スペイン": "ES", "カナダ": "CA",
    "オーストラリア": "AU", "ニュージーランド": "NZ", "インド": "IN", "インドネシア": "ID", "ベトナム": "VN",
    "フィリピン": "PH", "タイ": "TH", "マレーシア": "MY", "シンガポール": "SG", "ブラジル": "BR",
    "メキシコ": "MX", "ロシア": "RU", "ネパール": "NP", "ミャンマー": "MM", "バングラデシュ": "BD",
    "スリランカ": "LK", "パキスタン": "PK", "モンゴル": "MN", "カンボジア": "KH", "ペルー": "PE",
    "アルゼンチン": "AR", "オランダ": "NL", "スイス": "CH", "スウェーデン": "SE", "ノルウェー": "NO",
    "フィンランド": "FI", "デンマーク": "DK", "ポーランド": "PL", "ウクライナ": "UA", "トルコ": "TR",
    "エジプト": "EG", "南アフリカ": "ZA", "ナイジェリア": "NG", "ケニア": "KE", "アイルランド": "IE",
    "ポルトガル": "PT", "ベルギー": "BE", "オーストリア": "AT", "ギリシャ": "GR", "イスラエル": "IL",
    "サウジアラビア": "SA", "アラブ首長国連邦": "AE", "ウズベキスタン": "UZ", "カザフスタン": "KZ",
}  # fmt: skip

_CODE = re.compile(r"^[A-Za-z]{2}$")
_SUFFIXES = re.compile(r"\s*\((?:the|uk|south|western|american)\)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Country:
    code: str | None  # ISO 3166-1 alpha-2 when recognised
    name: str  # the English name when recognised, else the text as given


@dataclass(frozen=True)
class TimezoneChoice:
    timezone: str
    source: Literal["stated", "country", "fallback"]


def _normalise(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).strip().casefold()
    folded = folded.removeprefix("the ").strip(" .")
    return re.sub(r"\s+", " ", folded)


@cache
def _tab(name: str) -> list[list[str]]:
    try:
        text = resources.files("tzdata.zoneinfo").joinpath(name).read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError, OSError):
        return []
    return [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]


@cache
def country_names() -> dict[str, str]:
    """alpha-2 code -> English name, from tzdata's iso3166.tab."""
    return {row[0]: row[1] for row in _tab("iso3166.tab") if len(row) >= 2}


@cache
def _names_to_codes() -> dict[str, str]:
    table = {_normalise(_SUFFIXES.sub("", name)): code for code, name in country_names().items()}
    table.update({_normalise(name): code for code, name in country_names().items()})
    table.update({_normalise(alias): code for alias, code in ALIASES.items()})
    return table


@cache
def _zones_by_country() -> dict[str, list[str]]:
    zones: dict[str, list[str]] = {}
    for row in _tab("zone.tab"):
        if len(row) >= 3:
            zones.setdefault(row[0], []).append(row[2])
    return zones


def resolve_country(text: str) -> Country:
    """The country for a code or a name; unknown text is kept as given (code None)."""
    cleaned = unicodedata.normalize("NFKC", text).strip()
    key = _normalise(cleaned)
    code = ALIASES.get(cleaned) or _names_to_codes().get(key)
    if code is None and _CODE.match(cleaned):
        candidate = cleaned.upper()
        if candidate in country_names() or candidate in CAPITAL_ZONES or candidate in COMMON_ZONES:
            code = candidate
    if code is None:
        return Country(None, cleaned)
    return Country(code, country_names().get(code, code))


def timezone_for_country(code: str | None) -> str | None:
    """The documented default zone of a country, or None when it cannot be inferred."""
    if code is None:
        return None
    if code in CAPITAL_ZONES:
        return CAPITAL_ZONES[code]
    if code in COMMON_ZONES:
        return COMMON_ZONES[code]
    zones = _zones_by_country().get(code)
    return zones[0] if zones else None


def infer_timezone(country: str | None, stated: str | None = None) -> TimezoneChoice:
    """The applicant's zone: a valid stated one, else the country's, else Asia/Tokyo."""
    if stated is not None and is_timezone(stated.strip()):
        return TimezoneChoice(stated.strip(), "stated")
    code = resolve_country(country).code if country else None
    zone = timezone_for_country(code)
    if zone is not None and is_timezone(zone):
        return TimezoneChoice(zone, "country")
    return TimezoneChoice(FALLBACK_TIMEZONE, "fallback")
