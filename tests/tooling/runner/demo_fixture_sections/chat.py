"""A demo section that fails, so the demo reports its traceback and exits 1."""

from __future__ import annotations

from typing import Any


def run(ctx: Any) -> None:
    ctx.section("Fixture chat section", "A section that fails on purpose.")
    raise RuntimeError("chat fixture broke on purpose")
