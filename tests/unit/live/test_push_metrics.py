"""What the live channel's posts met, as the function's metrics (``live.push_metrics``): a gone
connection and a failed post are counted with their values, each invocation reports only what
happened since the last one, and an invocation that pushed nothing adds no metric at all."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lambda_agents.live import NoLiveChannel, SocketChannel, done_frame, emit_push_counts
from lambda_agents.observability import metrics

from .test_socket_channel import Directory, Poster

LIVE_METRICS = ("LiveFramesPosted", "LiveConnectionsGone", "LivePostsFailed", "LiveFramesDropped")


@pytest.fixture(autouse=True)
def no_metrics_before_or_after() -> Iterator[None]:
    metrics.clear_metrics()
    yield
    metrics.clear_metrics()


def emitted() -> dict[str, list[float]]:
    """The live metrics the function would flush now, each with its values."""
    return {name: list(metrics.metric_set[name]["Value"]) for name in LIVE_METRICS if name in metrics.metric_set}


def test_a_post_that_met_410_and_one_that_failed_are_emitted_with_their_values() -> None:
    poster = Poster(gone=("gone",), failing=("broken",))
    channel = SocketChannel(Directory(alice=["a1", "gone", "broken", "a2"]), poster)
    channel.send("alice", done_frame("s1", 2, {}))  # waits until posted
    emit_push_counts(channel)
    assert emitted() == {"LiveFramesPosted": [2.0], "LiveConnectionsGone": [1.0], "LivePostsFailed": [1.0]}
    assert metrics.metric_set["LivePostsFailed"]["Unit"] == "Count"


def test_each_invocation_reports_only_what_happened_since_the_last_one() -> None:
    poster = Poster(failing=("broken",))
    channel = SocketChannel(Directory(alice=["a1", "broken"]), poster)
    channel.send("alice", done_frame("s1", 2, {}))
    emit_push_counts(channel)
    metrics.clear_metrics()  # the invocation's flush
    channel.send("alice", done_frame("s1", 4, {}))
    channel.send("alice", done_frame("s1", 6, {}))
    emit_push_counts(channel)
    assert emitted() == {"LiveFramesPosted": [2.0], "LivePostsFailed": [2.0]}
    assert (channel.counts.posted, channel.counts.failed) == (3, 3)  # the channel's own tally goes on


def test_an_invocation_that_pushed_nothing_adds_no_metric() -> None:
    channel = SocketChannel(Directory(alice=["a1"]), Poster())
    emit_push_counts(channel, NoLiveChannel())
    assert metrics.metric_set == {}


def test_the_channels_of_one_function_are_reported_together() -> None:
    chat = SocketChannel(Directory(alice=["a1"]), Poster())
    interview = SocketChannel(Directory(bob=["b1", "b2"]), Poster(gone=("b2",)))
    chat.send("alice", done_frame("s1", 2, {}))
    interview.send("bob", done_frame("s2", 2, {}))
    emit_push_counts(chat, interview)
    assert emitted() == {"LiveFramesPosted": [2.0], "LiveConnectionsGone": [1.0]}
