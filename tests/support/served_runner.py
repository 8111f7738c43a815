"""The template's API served by the local runner on 127.0.0.1 with the offline model, as
``make serve`` runs it, for the suites that talk to it over HTTP (contract, live scenario, browser)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from devtools.runner import LocalRunner, serving


@contextmanager
def served_offline() -> Iterator[str]:
    """The base URL; moto's state is process-wide, so it is reset afterwards for the next module."""
    with LocalRunner(environ={"AWS_DEFAULT_REGION": "us-east-1", "AI_AGENT_MODE": "mock"}) as runner:
        try:
            with serving(runner) as url:
                yield url
        finally:
            runner.aws.reset()
