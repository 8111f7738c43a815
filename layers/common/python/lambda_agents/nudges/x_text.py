"""The length X gives a post: twitter-text's weighted length, configuration v3
(docs/nudges.md#x-text-weight-rules: an X post's "at most 280" means X's own count, not Python's ``len``).

X weighs each code point by range: U+0000-U+10FF, U+2000-U+200D, U+2010-U+201F and
U+2032-U+2037 weigh 1, everything else 2 (so CJK, kana, hangul and emoji weigh 2); a URL weighs
23 whatever its length; the text is NFC-normalised first; the limit is 280.

No maintained library does this: ``twitter-text-parser`` (the only conformant port on PyPI, last
released 2023) imports ``pkg_resources``, which the Lambda Python 3.13 runtime does not ship, and
its URL pattern takes quadratic time (0.35 s for 400 characters, 32 s for 4,000). So this is a
linear scan that errs on one side only: it never counts less than X does, so a post it accepts
X accepts; near the limit it may refuse a post X would take:

- an emoji sequence (a skin tone, ``❤️``'s variation selector, a ZWJ family) counts as its code
  points, never less than X's 2 for the whole sequence; ``©`` and ``®`` count 2, as X counts them;
- a URL with a protocol and a host of valid labels under a well-known top-level domain counts
  23; any other URL-like word (no protocol, an unknown domain) counts the larger of 23 and its
  own weight, since X counts one or the other depending on its domain list. A URL ends at the
  first character outside the ASCII URL characters, and trailing punctuation is not part of it.
"""

from __future__ import annotations

import re
import unicodedata

MAX_WEIGHTED_LENGTH = 280
URL_WEIGHT = 23
_LIGHT_RANGES = ((0x0000, 0x10FF), (0x2000, 0x200D), (0x2010, 0x201F), (0x2032, 0x2037))
_HEAVY_LIGHT_CHARS = frozenset("\u00a9\u00ae")  # (c) and (R) are emoji to X: weight 2
INVALID_CHARACTERS = frozenset("\ufffe\ufeff\uffff")
# Top-level domains X recognises for certain (a subset of twitter-text's list): a URL under one
# of these counts exactly 23; under any other, the larger of 23 and its own weight.
_KNOWN_TLDS = frozenset(
    {
        "com",
        "net",
        "org",
        "info",
        "biz",
        "edu",
        "gov",
        "io",
        "co",
        "me",
        "app",
        "dev",
        "ai",
        "ly",
        "tv",
        "fm",
        "gl",
        "gg",
        "to",
        "jp",
        "us",
        "uk",
        "de",
        "fr",
        "it",
        "es",
        "nl",
        "ca",
        "au",
        "cn",
        "kr",
        "tw",
        "hk",
        "sg",
        "in",
        "br",
        "ru",
        "ch",
        "se",
        "no",
        "dk",
        "fi",
        "at",
        "be",
        "pl",
        "pt",
        "ie",
        "nz",
        "mx",
        "ar",
        "cl",
        "za",
        "id",
        "th",
        "vn",
        "ph",
        "my",
        "eu",
        "asia",
        "shop",
        "blog",
        "news",
        "page",
        "link",
        "site",
        "online",
        "store",
        "tech",
    }
)
# Characters X accepts inside a URL path or query (a subset of twitter-text's), and those a URL may end with.
_URL_BODY = r"[A-Za-z0-9!*';:=+,.$/%#\-_~&@?]"
_URL_END = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789=_#/-")
_HOST = r"(?P<host>[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+)"
_URL_REST = re.compile(r"(?::[0-9]{1,5})?(?:[/?]" + _URL_BODY + r"*)?")
_TCO_SLUG = re.compile(r"/[A-Za-z0-9]{1,40}")
# Without a protocol X takes a path ("example.com/a?b") but stops before a bare query ("example.com?b").
_DOMAIN_URL = re.compile(_HOST + r"(?:/" + _URL_BODY + r"*)?")
_PROTOCOL = re.compile(r"https?://", re.IGNORECASE)
_WORD_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_DOMAIN_CHARS = _WORD_START | {"-", "."}
# twitter-text: a URL is not one when glued to a letter, a digit, or @ $ # (and their full-width forms).
_NOT_BEFORE_URL = frozenset("@\uff20$#\uff03\u202a\u202b\u202c\u202d\u202e")
_LABEL = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?$")


def char_weight(char: str) -> int:
    point = ord(char)
    if char in _HEAVY_LIGHT_CHARS:
        return 2
    return 1 if any(start <= point <= end for start, end in _LIGHT_RANGES) else 2


def weighted_length(text: str) -> int:
    """X's weighted length of ``text`` (never less than X's own count).

    One pass: a URL is looked for only where a word starts, and a word that is not one is
    counted as characters at once, so the time is linear in the text.
    """
    normalised = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    total = 0
    index = 0
    size = len(normalised)
    while index < size:
        char = normalised[index]
        if char in _WORD_START and (index == 0 or normalised[index - 1] not in _DOMAIN_CHARS - {".", "-"}):
            end, weight = _word_at(normalised, index)
            total += weight
            index = end
            continue
        total += char_weight(char)
        index += 1
    return total


def x_text_problem(text: str) -> str | None:
    """Why X would refuse ``text`` as a post, or None."""
    if not text.strip():
        return "text must not be empty"
    invalid = sorted({f"U+{ord(char):04X}" for char in text if char in INVALID_CHARACTERS})
    if invalid:
        return f"text contains characters X refuses ({', '.join(invalid)})"
    length = weighted_length(text)
    if length > MAX_WEIGHTED_LENGTH:
        return (
            f"text is {length} by X's count, over the limit of {MAX_WEIGHTED_LENGTH} "
            "(Japanese, Chinese and Korean characters and emoji count 2 each, a URL 23)"
        )
    return None


def _word_at(text: str, index: int) -> tuple[int, int]:
    """(end, weight) of the ASCII word starting at ``index``: a URL, or plain characters."""
    protocol = _PROTOCOL.match(text, index)
    if protocol is not None:
        url = _protocol_url_at(text, index, protocol.end())
        if url is not None:
            return url
        return protocol.end(), protocol.end() - index  # "https://" without a host: characters; the rest anew
    domain = _DOMAIN_URL.match(text, index)
    if domain is not None and _domain_shaped(domain.group("host")):
        # X counts 23 or the characters, depending on its domain list: the larger never undercounts.
        end = _trimmed_end(text, domain.end("host"), domain.end())
        return end, max(URL_WEIGHT, end - index)
    end = index
    while end < len(text) and text[end] in _DOMAIN_CHARS:
        end += 1
    return end, end - index  # ASCII letters, digits, '-' and '.': weight 1 each


def _protocol_url_at(text: str, index: int, host_start: int) -> tuple[int, int] | None:
    """(end, weight) of the URL whose protocol ends at ``host_start``, or None without a host."""
    host_end = host_start
    idn = False  # per label: one that starts with a non-ASCII character is internationalised
    while host_end < len(text):
        char = text[host_end]
        if host_end == host_start or text[host_end - 1] == ".":
            idn = not char.isascii()
        if not _host_char(char, idn):
            break
        host_end += 1
    while host_end > host_start and text[host_end - 1] in "-.":
        host_end -= 1
    host = text[host_start:host_end]
    labels = host.split(".")
    if len(labels) < 2 or not all(labels) or not labels[-1].isalpha():
        return None
    if host.lower() == "t.co":
        # twitter-text: a t.co link takes only its slug, nothing after it.
        slug = _TCO_SLUG.match(text, host_end)
        end = host_end if slug is None else slug.end()
    else:
        rest = _URL_REST.match(text, host_end)
        end = _trimmed_end(text, host_end, host_end if rest is None else rest.end())
    certain = (
        host.isascii()
        and (index == 0 or not (text[index - 1].isalnum() or text[index - 1] in _NOT_BEFORE_URL))
        and labels[-1].lower() in _KNOWN_TLDS
        and all(_LABEL.match(label) for label in labels)
    )
    own = sum(char_weight(char) for char in text[index:end])
    return end, URL_WEIGHT if certain else max(URL_WEIGHT, own)


def _host_char(char: str, idn: bool) -> bool:
    """An ASCII label ends at the first other character (X ends "example.com日" before 日); an
    internationalised one (X reads those too) takes letters, digits and symbols such as emoji."""
    if char in "-.":
        return True
    if not idn:
        return char.isascii() and char.isalnum()
    return char.isalnum() or unicodedata.category(char) == "So"


def _domain_shaped(host: str) -> bool:
    """Labels and an alphabetic top-level domain ("example.com"; not "3.14", "e.g" or "v1.2")."""
    tld = host.rsplit(".", 1)[-1]
    return "." in host and tld.isalpha() and len(tld) >= 2


def _trimmed_end(text: str, floor: int, end: int) -> int:
    """``end`` without trailing punctuation (the sentence's, not the URL's), never below ``floor``."""
    while end > floor and text[end - 1] not in _URL_END:
        end -= 1
    return end
