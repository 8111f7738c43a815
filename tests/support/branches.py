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
"""

from __future__ import annotations

from collections import Counter


class Branches:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def add(self, branch: str) -> None:
        self.counts[branch] += 1

    def assert_all(self, *branches: str) -> None:
        missed = [branch for branch in branches if not self.counts[branch]]
        assert not missed, f"no example reached {missed}; reached: {dict(self.counts)}"
