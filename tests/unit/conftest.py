"""The unit suite is pure: no socket, no subprocess, no moto. A test that needs one belongs in
``tests/integration`` (moto, the fake OpenAI server), ``tests/infrastructure`` (build, bundle,
sam, browser) or ``tests/tooling`` (the local runner, devtools, benchmarks); here it fails at
once and says where it should go, so the suite stays fast (``make unit``)."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from typing import Any, NoReturn

import pytest


class NotAUnitTest(AssertionError):
    pass


def _refuse(what: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise NotAUnitTest(f"a unit test {what}: move it to tests/integration, tests/infrastructure or tests/tooling")

    return refuse


@pytest.fixture(autouse=True)
def pure(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(socket.socket, "connect", _refuse("opened a connection"))
    monkeypatch.setattr(socket.socket, "connect_ex", _refuse("opened a connection"))
    monkeypatch.setattr(socket.socket, "bind", _refuse("started a server"))
    monkeypatch.setattr(subprocess.Popen, "__init__", _refuse("started a process"))
    try:
        from moto.core.models import MockAWS
    except ImportError:  # pragma: no cover - moto is a dev dependency
        pass
    else:
        monkeypatch.setattr(MockAWS, "start", _refuse("started moto"))
    yield
