"""Which branches of a property test its examples reached. A property whose assertions live in a
branch asserts nothing for the examples that miss it; counting the branches lets the test also
assert that each was reached, so it cannot pass without checking anything:

    def test_something() -> None:
        reached = Branches()

        @given(...)
        def example(value: str) -> None:
            if ...:
                reached.add("json")
                assert ...
            else:
                reached.add("none")

        example()
        reached.assert_all("json", "none")

When random draws almost never reach a branch (a sequence of changes that completes an interview),
``interleavings`` weaves the steps that reach it in between random ones, so the strategy still
draws both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TypeVar

from hypothesis import strategies as st

ItemT = TypeVar("ItemT")


def interleavings(steps: Sequence[ItemT], noise: Sequence[ItemT]) -> st.SearchStrategy[list[ItemT]]:
    """Every item of ``steps`` and of ``noise``, each in its own order, mixed at drawn places."""

    def merge(order: list[bool]) -> list[ItemT]:
        from_steps, from_noise = iter(steps), iter(noise)
        return [next(from_steps) if is_step else next(from_noise) for is_step in order]

    return st.permutations([True] * len(steps) + [False] * len(noise)).map(merge)


class Branches:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def add(self, branch: str) -> None:
        self.counts[branch] += 1

    def assert_all(self, *branches: str) -> None:
        missed = [branch for branch in branches if not self.counts[branch]]
        assert not missed, f"no example reached {missed}; reached: {dict(self.counts)}"
