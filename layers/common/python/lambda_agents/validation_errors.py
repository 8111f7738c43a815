"""One way to say what a pydantic ValidationError found, for every message that names the
field: the engine's feedback to the model, tool-call refusals, parse verdicts, stored-data and
direct-invocation errors. ``loc: msg`` per problem, the message alone at the root."""

from __future__ import annotations

from pydantic import ValidationError


def describe_errors(error: ValidationError, *, limit: int | None = None, root: str = "") -> list[str]:
    """``location: message`` for the first ``limit`` problems; ``root`` names a root-level one."""
    found = []
    for item in error.errors()[:limit]:
        location = ".".join(str(part) for part in item.get("loc", ())) or root
        message = str(item.get("msg", "invalid"))
        found.append(f"{location}: {message}" if location else message)
    return found


def summarise_errors(error: ValidationError, *, limit: int = 10, root: str = "", separator: str = "; ") -> str:
    """``describe_errors`` joined, with ``and N more`` when problems were left out."""
    parts = describe_errors(error, limit=limit, root=root)
    more = error.error_count() - len(parts)
    if more > 0:
        parts.append(f"and {more} more")
    return separator.join(parts)
