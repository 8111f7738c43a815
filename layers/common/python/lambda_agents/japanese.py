"""Is this text Japanese? One answer for the offline models' language guess, the interview's
language default and the chat's language policy."""

from __future__ import annotations

import re

JAPANESE_SCRIPT = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")  # hiragana, katakana, CJK ideographs
_KANA = re.compile(r"[\u3040-\u30ff]")
_LETTER = re.compile(r"[^\W\d_]")
JAPANESE_SHARE = 0.3


def has_japanese(text: str) -> bool:
    """Any Japanese character at all: enough to guess the language of a short user message."""
    return JAPANESE_SCRIPT.search(text) is not None


def is_japanese_prose(text: str) -> bool:
    """Prose written in Japanese: some kana, and at least 30 % of the letters Japanese (kana or
    kanji). Names and terms in Latin letters inside a Japanese answer do not make it English;
    kanji alone (Chinese) does not make it Japanese."""
    letters = _LETTER.findall(text)
    if not letters or not _KANA.search(text):
        return False
    japanese = sum(1 for char in letters if JAPANESE_SCRIPT.match(char))
    return japanese / len(letters) >= JAPANESE_SHARE
