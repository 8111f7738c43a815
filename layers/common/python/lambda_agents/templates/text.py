"""Text rules shared by the fields people and models fill in.

A JSON body may carry ``"\\ud800"``, which Python decodes into a lone surrogate that UTF-8 (and
so DynamoDB) cannot store; pydantic's own ``str`` validation already rejects it
(``string_unicode``), so every str field of an input model answers that with a 400 naming it.
``VisibleText`` also refuses a value that is only whitespace (a name, a message).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator


def require_visible(value: str) -> str:
    if not value.strip():
        raise ValueError("must contain more than whitespace")
    return value


VisibleText = Annotated[str, AfterValidator(require_visible)]
