"""A queue drained the way Lambda's SQS event source drains it, so that a local fan-out shows what
a deployed one would do.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .runner_event_sources import (
    DeliveryReport,
    _approximate_count,
    _chunks,
    _receive_batch,
    failed_message_ids,
    sqs_event,
)
from .runner_lambda import FunctionFailed, lambda_vcpus
from .runner_template import FunctionSpec, QueueSpec, QueueSubscription
from .template import ROOT

IDLE_POLL_S = 0.1


class ContainerProcess:
    """One container of a function (``runner_container``): started on first use (its cold start)."""

    def __init__(self, function: FunctionSpec, environment: Mapping[str, str], region: str, root: Path = ROOT) -> None:
        spec = json.dumps(asdict(function))
        self._process = subprocess.Popen(
            [sys.executable, "-m", "devtools.runner_container", spec, region, str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL if os.environ.get("RUNNER_CONTAINER_LOGS") != "1" else None,
            # Python 3.13 reports PYTHON_CPU_COUNT as os.cpu_count() and os.process_cpu_count():
            # the vCPUs Lambda gives the function's memory, not this machine's cores.
            env={
                **os.environ,
                **environment,
                "PYTHONPATH": str(ROOT),
                "PYTHON_CPU_COUNT": str(lambda_vcpus(function.memory_mb)),
            },
            cwd=ROOT,
            text=True,
        )

    def invoke(self, event: Any) -> dict[str, Any]:
        """The invocation's outcome: ``result`` or ``error``, with the container's pid and times."""
        assert self._process.stdin is not None and self._process.stdout is not None
        try:
            self._process.stdin.write(json.dumps(event) + "\n")
            self._process.stdin.flush()
            line = self._process.stdout.readline()
        except OSError as error:  # the container is gone (a crash at its cold start, a kill)
            raise FunctionFailed("Runtime.ExitError", f"the container is gone: {error}") from error
        if not line:
            raise FunctionFailed("Runtime.ExitError", f"the container exited ({self._process.poll()})")
        outcome: dict[str, Any] = json.loads(line)
        return outcome

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def close(self) -> None:
        if self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()


@dataclass
class DrainReport(DeliveryReport):
    """A delivery report with what concurrency adds: containers started, batches at once, time."""

    containers: int = 0
    most_at_once: int = 0
    batch_sizes: list[int] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        return (
            f"{super().summary()}; {self.containers} containers, "
            f"at most {self.most_at_once} batches at once, {self.seconds:.1f} s"
        )


@dataclass
class QueueSource:
    """An SQS event source as Lambda runs it (see the module docstring)."""

    sqs: Any
    queue: QueueSpec
    urls: Mapping[str, str]
    subscription: QueueSubscription
    function: FunctionSpec
    environment: Mapping[str, str]
    region: str
    maximum_concurrency: int
    clock: Callable[[], float] = time.monotonic
    root: Path = ROOT  # where the template's CodeUri and layers are

    def drain(self, time_limit_s: float = 600.0) -> DrainReport:
        report = DrainReport(self.queue.logical_id, self.function.logical_id)
        started = self.clock()
        url = self.urls[self.queue.logical_id]
        dlq_url = self.urls.get(self.queue.dead_letter_queue_id or "")
        dlq_before = _approximate_count(self.sqs, dlq_url) if dlq_url else 0
        containers: list[ContainerProcess] = []
        idle: list[ContainerProcess] = []
        lock = threading.Lock()

        def run(batch: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], set[str]]:
            with lock:
                container = idle.pop() if idle else None
            if container is None:
                container = ContainerProcess(self.function, self.environment, self.region, self.root)
                with lock:
                    containers.append(container)
            ids = [message["MessageId"] for message in batch]
            try:
                outcome = container.invoke(sqs_event(batch, self.queue, self.region))
                failed = (
                    set(ids) if "error" in outcome else failed_message_ids(outcome["result"], ids, self.subscription)
                )
            except FunctionFailed:
                failed = set(ids)
            if container.alive:  # a container that died is replaced by the next batch's cold start
                with lock:
                    idle.append(container)
            return batch, failed

        running: set[Future[tuple[list[dict[str, Any]], set[str]]]] = set()
        with ThreadPoolExecutor(self.maximum_concurrency) as pool:
            try:
                while self.clock() - started < time_limit_s:
                    while len(running) < self.maximum_concurrency:
                        batch = self._receive(url)
                        if not batch:
                            break
                        report.batches += 1
                        report.deliveries += len(batch)
                        report.batch_sizes.append(len(batch))
                        running.add(pool.submit(run, batch))
                        report.most_at_once = max(report.most_at_once, len(running))
                    if not running:
                        if _approximate_count(
                            self.sqs, url, "ApproximateNumberOfMessagesNotVisible"
                        ) == 0 and not _approximate_count(self.sqs, url):
                            break
                        time.sleep(IDLE_POLL_S)  # messages in flight (a failure's visibility timeout)
                        continue
                    done, running = wait(running, timeout=IDLE_POLL_S, return_when=FIRST_COMPLETED)
                    for future in done:
                        batch, failed = future.result()
                        succeeded = [m for m in batch if m["MessageId"] not in failed]
                        for chunk in _chunks(succeeded):
                            self.sqs.delete_message_batch(
                                QueueUrl=url,
                                Entries=[
                                    {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(chunk)
                                ],
                            )
                        report.succeeded += len(succeeded)
                        report.failed_deliveries += len(batch) - len(succeeded)
            finally:
                for future in running:
                    future.result()
                for container in containers:
                    container.close()
        report.containers = len(containers)
        report.seconds = self.clock() - started
        report.left_in_queue = self._in_queue(url)
        if dlq_url:
            report.moved_to_dead_letter_queue = _approximate_count(self.sqs, dlq_url) - dlq_before
        return report

    def _in_queue(self, url: str) -> int:
        """Messages visible or in flight (received, not yet deleted)."""
        return _approximate_count(self.sqs, url) + _approximate_count(
            self.sqs, url, "ApproximateNumberOfMessagesNotVisible"
        )

    def _receive(self, url: str) -> list[dict[str, Any]]:
        """Up to BatchSize messages, waiting up to the batching window to fill the batch."""
        size = self.subscription.batch_size
        window_ends = self.clock() + self.subscription.batching_window_s
        batch = _receive_batch(self.sqs, url, size)
        while batch and len(batch) < size and self.clock() < window_ends:
            time.sleep(min(IDLE_POLL_S, max(0.0, window_ends - self.clock())))
            batch += _receive_batch(self.sqs, url, size - len(batch))
        return batch
