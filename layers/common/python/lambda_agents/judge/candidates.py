"""Which rules the model may choose from, and the tags that name them.

Rules are numbered as the caller numbered them: rule i (0-based ``ruleIndex``) is number i + 1
in every tag (``[MOVEMENT:i+1]``), every criteria table and every answer (``step``,
``matched_index``, ``[JUDGE:N]``), as takt's ``detectRuleIndex`` reads them. Interactive-only
rules are not candidates in a non-interactive run: they keep their numbers (the others are not
renumbered), they are not shown to the model, and a tag or an answer naming one is rejected
like any number that names no candidate: the stage fails and the next one runs. Nothing is ever
mapped to a different rule than the number says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .models import Rule


@dataclass(frozen=True)
class Candidate:
    number: int  # 1-based, the caller's numbering: what tags and answers say
    original_index: int  # 0-based, the caller's ``ruleIndex``
    rule: Rule


class NoCandidates(ValueError):
    """No rule can be chosen: none given, or all interactive-only in a non-interactive run."""


def select_candidates(rules: list[Rule], interactive: bool) -> list[Candidate]:
    if not rules:
        raise NoCandidates("rules must contain at least one rule")
    candidates = [
        Candidate(index + 1, index, rule)
        for index, rule in enumerate(rules)
        if interactive or not rule.interactive_only
    ]
    if not candidates:
        raise NoCandidates("every rule is interactive-only and the run is not interactive")
    return candidates


def by_number(candidates: Iterable[Candidate], number: int | None) -> Candidate | None:
    """The candidate the caller numbered ``number``, or None (no such rule, or not a candidate)."""
    return next((candidate for candidate in candidates if candidate.number == number), None)


def numbers_of(candidates: Iterable[Candidate]) -> str:
    return ", ".join(str(candidate.number) for candidate in candidates)


def _tag_pattern(name: str) -> re.Pattern[str]:
    return re.compile(r"\[" + re.escape(name) + r":\s*(-?\d{1,9})\s*\]", re.IGNORECASE)


def last_numbered_tag(text: str, name: str) -> int | None:
    """N of the LAST ``[NAME:N]`` in ``text`` (agents quote earlier tags), whatever N is.

    The name is matched case-insensitively and regex-escaped. The caller checks N against the
    candidates: a last tag that names no candidate is a rejection, never a reason to trust an
    earlier (quoted) one.
    """
    last = None
    for match in _tag_pattern(name).finditer(text):
        last = match
    return None if last is None else int(last.group(1))


def detect_by_rule_tag(text: str, movement: str, rules: list[Rule], candidates: list[Candidate]) -> Candidate | None:
    """Phase 1 fallback: the rule whose tag occurs LAST in the output (its own ``tag``, or
    ``[MOVEMENT:N]`` in the caller's numbering), when that rule is a candidate; else None."""
    lowered = text.lower()
    best: tuple[int, int] | None = None  # (position, 1-based rule number)
    for index, rule in enumerate(rules):
        if rule.tag:
            position = lowered.rfind(rule.tag.lower())
            if position >= 0 and (best is None or position > best[0]):
                best = (position, index + 1)
    last = None
    for match in _tag_pattern(movement).finditer(text):
        last = match
    if last is not None and (best is None or last.start() > best[0]):
        best = (last.start(), int(last.group(1)))
    return None if best is None else by_number(candidates, best[1])
