"""The tolerant template-name search (docs/engine.md#tolerant-search): a caller who types a
name slightly differently still finds the template it would otherwise duplicate.

``name_key`` folds away what does not make two names different for a person:
NFKC (full-width / half-width letters, digits and katakana), katakana -> hiragana, case
(casefold), and every space, punctuation mark and symbol. ``similarity`` then scores two keys:
1.0 when equal, 0.75..1.0 when one contains the other (scaled by how much of the longer one it
covers), otherwise the Dice coefficient of their character bigrams. Matches at or above
``DEFAULT_THRESHOLD`` are returned best first.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

DEFAULT_THRESHOLD = 0.5
_KATAKANA_FIRST, _KATAKANA_LAST = 0x30A1, 0x30F6  # ァ .. ヶ: each has a hiragana 0x60 below
_DROPPED_CATEGORIES = ("Z", "P", "S", "C")


def name_key(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text)
    chars = []
    for original in folded:
        code = ord(original)
        char = chr(code - 0x60) if _KATAKANA_FIRST <= code <= _KATAKANA_LAST else original
        if not unicodedata.category(char).startswith(_DROPPED_CATEGORIES):
            chars.append(char)
    # casefold after the kana step: it may expand (ß -> ss), never into kana.
    return unicodedata.normalize("NFKC", "".join(chars).casefold())


def similarity(query_key: str, candidate_key: str) -> float:
    if not query_key or not candidate_key:
        return 0.0
    if query_key == candidate_key:
        return 1.0
    shorter, longer = sorted((query_key, candidate_key), key=len)
    if shorter in longer:
        return 0.75 + 0.25 * len(shorter) / len(longer)
    return _dice(_bigrams(query_key), _bigrams(candidate_key))


@dataclass(frozen=True)
class NamedTemplate:
    template_id: str
    name: str
    created_at: str
    step_count: int
    key: str


@dataclass(frozen=True)
class SearchHit:
    template: NamedTemplate
    score: float

    def as_dict(self) -> dict[str, object]:
        return {
            "templateId": self.template.template_id,
            "name": self.template.name,
            "createdAt": self.template.created_at,
            "stepCount": self.template.step_count,
            "score": round(self.score, 3),
        }


def rank(
    query: str, templates: Iterable[NamedTemplate], limit: int, threshold: float = DEFAULT_THRESHOLD
) -> list[SearchHit]:
    """Templates whose names resemble ``query``: best score first, then newest first."""
    key = name_key(query)
    hits = [SearchHit(t, score) for t in templates if (score := similarity(key, t.key)) >= threshold]
    hits.sort(key=lambda hit: hit.template.created_at, reverse=True)
    hits.sort(key=lambda hit: hit.score, reverse=True)
    return hits[:limit]


def _bigrams(key: str) -> Counter[str]:
    if len(key) == 1:
        return Counter([key])
    return Counter(key[index : index + 2] for index in range(len(key) - 1))


def _dice(left: Counter[str], right: Counter[str]) -> float:
    total = sum(left.values()) + sum(right.values())
    return 2 * sum((left & right).values()) / total if total else 0.0
