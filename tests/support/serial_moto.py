"""moto's in-process mock handles each AWS call in the calling thread, and its DynamoDB backend is
not safe for two at once (a transaction deep-copies a table while another thread writes to it:
"dictionary changed size during iteration"). DynamoDB serialises an item's writes itself, so
tests whose handlers run work in threads (the generator serves a batch's users at once) send
moto one call at a time, as the embedded server does (``devtools/local_aws.py``)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from moto.core.botocore_stubber import BotocoreStubber


def serialise_moto_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    lock = threading.RLock()
    handle = BotocoreStubber.__call__

    def one_at_a_time(self: BotocoreStubber, event_name: str, request: Any, **kwargs: Any) -> Any:
        with lock:
            return handle(self, event_name, request, **kwargs)

    monkeypatch.setattr(BotocoreStubber, "__call__", one_at_a_time)
