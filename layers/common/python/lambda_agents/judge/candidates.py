"""Which rules the model may choose from, and the tags that name them.

Interactive-only rules are not candidates in a non-interactive run. Candidates are numbered
1..N for the model; ``original_index`` maps an answer back to the caller's rule order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .models import Rule


@dataclass(frozen=True)
class Candidate:
    number: int  # 1-based, what the model sees
    original_index: int  # 0-based, what the caller gets
    rule: Rule


class NoCandidates(ValueError):
    """No rule can be chosen: none given, or all interactive-only in a non-interactive run."""


def select_candidates(rules: list[Rule], interactive: bool) -> list[Candidate]:
    if not rules:
        raise NoCandidates("rules must contain at least one rule")
    kept = [(index, rule) for index, rule in enumerate(rules) if interactive or not rule.interactive_only]
    if not kept:
        raise NoCandidates("every rule is interactive-only and the run is not interactive")
    return [Candidate(number, index, rule) for number, (index, rule) in enumerate(kept, start=1)]


def last_numbered_tag(text: str, name: str, count: int) -> int | None:
    """N of the LAST ``[NAME:N]`` in ``text`` (agents quote earlier tags), when 1 <= N <= count.

    The name is matched case-insensitively and regex-escaped; a last tag that is out of range
    is a rejection, not a reason to trust an earlier (quoted) one.
    """
    pattern = re.compile(r"\[" + re.escape(name) + r":\s*(-?\d{1,9})\s*\]", re.IGNORECASE)
    last = None
    for match in pattern.finditer(text):
        last = match
    if last is None:
        return None
    number = int(last.group(1))
    return number if 1 <= number <= count else None


def candidate_tag(movement: str, candidate: Candidate) -> str:
    return candidate.rule.tag or f"[{movement.upper()}:{candidate.number}]"


def detect_by_rule_tag(text: str, movement: str, candidates: list[Candidate]) -> Candidate | None:
    """Phase 1 fallback: the candidate whose tag occurs LAST in the output (case-insensitive)."""
    lowered = text.lower()
    best: tuple[int, Candidate] | None = None
    for candidate in candidates:
        position = lowered.rfind(candidate_tag(movement, candidate).lower())
        if position >= 0 and (best is None or position > best[0]):
            best = (position, candidate)
    if best is not None:
        return best[1]
    number = last_numbered_tag(text, movement, len(candidates))
    return candidates[number - 1] if number is not None else None
