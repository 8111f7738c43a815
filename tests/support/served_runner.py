"""The template's API in the local runner on 127.0.0.1 with the offline model, as ``make serve``
runs it: called in process (``offline_runner``) by the contract suites, or over HTTP
(``served_offline``) by the suites that talk to it as a client would (contract, live scenario,
browser)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from devtools.runner import LocalRunner, serving
from devtools.runner_api import STAGE


@contextmanager
def offline_runner() -> Iterator[LocalRunner]:
    """The started runner; moto's state is process-wide, so it is reset afterwards for the next module."""
    with LocalRunner(environ={"AWS_DEFAULT_REGION": "us-east-1", "AI_AGENT_MODE": "mock"}) as runner:
        try:
            yield runner
        finally:
            runner.aws.reset()


@contextmanager
def served_offline() -> Iterator[str]:
    """The root URL of ``offline_runner`` served over HTTP (Swagger UI, /openapi.json); its routes
    answer under ``stage_url(root)``, as a deployed client calls them."""
    with offline_runner() as runner, serving(runner) as url:
        yield url


def stage_url(root: str) -> str:
    """The API's URL under its stage, the shape of the execute-api URL (the stack's output ApiUrl)."""
    return f"{root}/{STAGE}"
