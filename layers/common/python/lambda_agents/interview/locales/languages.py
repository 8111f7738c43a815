"""The applicant's language (the Greeter's set_language: docs/interview.md#languages-and-residence),
and the system's own texts in it.

``set_language`` stores a lower-case BCP 47 tag (``ja``, ``en``, ``pt-br``). A language name the
model sends instead of a code (``Japanese``, ``日本語``) is mapped for the languages applicants use
most; anything else that is not tag-shaped is an error the model can correct.

The system writes a few messages itself (the end of the interview, a graceful reply when the
agents could not finish a turn); those exist in Japanese and English, English for the rest.
"""

from __future__ import annotations

import re
import unicodedata

from ...japanese import has_japanese

_TAG = re.compile(r"^[a-z]{2,3}(?:-[a-z0-9]{2,8})*$")
_NAMES = {
    "japanese": "ja", "日本語": "ja", "english": "en", "英語": "en", "chinese": "zh", "中文": "zh",
    "中国語": "zh", "mandarin": "zh", "korean": "ko", "한국어": "ko", "韓国語": "ko", "vietnamese": "vi",
    "tiếng việt": "vi", "ベトナム語": "vi", "spanish": "es", "español": "es", "スペイン語": "es",
    "french": "fr", "français": "fr", "フランス語": "fr", "german": "de", "deutsch": "de", "ドイツ語": "de",
    "portuguese": "pt", "português": "pt", "ポルトガル語": "pt", "thai": "th", "ภาษาไทย": "th", "タイ語": "th",
    "indonesian": "id", "bahasa indonesia": "id", "インドネシア語": "id", "tagalog": "tl", "filipino": "fil",
    "nepali": "ne", "ネパール語": "ne", "hindi": "hi", "russian": "ru", "ロシア語": "ru", "italian": "it",
}  # fmt: skip


class InvalidLanguage(ValueError):
    pass


def normalise_language(text: str) -> str:
    """A BCP 47 tag for ``text`` (a tag or a known language name), or ``InvalidLanguage``."""
    folded = unicodedata.normalize("NFKC", text).strip().replace("_", "-").casefold()
    if folded in _NAMES:
        return _NAMES[folded]
    if _TAG.match(folded):
        return folded
    raise InvalidLanguage(f"{text!r} is not a language code: use an ISO 639-1 code such as 'ja' or 'en'")


def reply_language(language: str | None, latest_user_text: str = "") -> str:
    """'ja' or 'en' for the system's own messages: the session's language, else the applicant's script."""
    if language is not None:
        return "ja" if language.split("-")[0] == "ja" else "en"
    return "ja" if has_japanese(latest_user_text) else "en"


SYSTEM_TEXTS: dict[str, dict[str, str]] = {
    "completed": {
        "ja": "ありがとうございました。すべての項目をお伺いし、応募内容を受け付けました。"
        "担当者からの連絡をお待ちください。",
        "en": "Thank you. We have everything we need and your application has been received. We will be in touch.",
    },
    "audit_failed": {
        "ja": "ありがとうございました。応募内容は担当者が確認してからご連絡いたします。",
        "en": "Thank you. A member of our team will review your application before we get back to you.",
    },
    "loop_limit": {
        "ja": "申し訳ありません、うまく進められませんでした。お手数ですが、もう一度メッセージを送っていただけますか？",
        "en": "Sorry, I could not quite process that. Could you send your message again?",
    },
    "time_limit": {
        "ja": "申し訳ありません、時間内にお返事を用意できませんでした。"
        "続けるには、もう一度メッセージを送ってください。",
        "en": "Sorry, I could not prepare my answer in time. Please send a message to continue.",
    },
    "declined": {
        "ja": "申し訳ありません、その内容にはお答えできません。別の言い方で教えていただけますか？",
        "en": "Sorry, I cannot respond to that. Could you put it another way?",
    },
}


def system_text(kind: str, language: str) -> str:
    return SYSTEM_TEXTS[kind]["ja" if language == "ja" else "en"]
