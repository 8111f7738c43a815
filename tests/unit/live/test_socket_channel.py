"""The production LiveChannel: every open connection of the user and no one else's, a gone one
deleted, a slow or failing endpoint never felt by the caller, and an answer's last frame out before
the function returns (docs/api.md#websocket). In-memory directory and poster."""

from __future__ import annotations

import json
import threading

from lambda_agents.live import ConnectionGone, DeltaFrame, SocketChannel, done_frame, encoded, error_frame


class Directory:
    def __init__(self, **connections: list[str]) -> None:
        self.connections = {user: list(ids) for user, ids in connections.items()}
        self.removed: list[str] = []

    def connections_of(self, user_id: str) -> list[str]:
        return list(self.connections.get(user_id, []))

    def remove(self, connection_id: str) -> None:
        self.removed.append(connection_id)
        for ids in self.connections.values():
            if connection_id in ids:
                ids.remove(connection_id)


class Poster:
    def __init__(self, gone: tuple[str, ...] = (), failing: tuple[str, ...] = ()) -> None:
        self.posted: list[tuple[str, dict[str, object]]] = []
        self.gone = set(gone)
        self.failing = set(failing)
        self.release = threading.Event()
        self.release.set()
        self.blocked = threading.Event()

    def post(self, connection_id: str, data: bytes) -> None:
        if not self.release.is_set():
            self.blocked.set()
            self.release.wait(10)
        if connection_id in self.gone:
            raise ConnectionGone(connection_id)
        if connection_id in self.failing:
            raise RuntimeError("500 from @connections")
        self.posted.append((connection_id, json.loads(data)))


def delta(offset: int, text: str) -> DeltaFrame:
    return DeltaFrame(sessionId="s1", seq=2, offset=offset, text=text)


def test_a_frame_goes_to_every_open_connection_of_its_user_and_to_no_one_else() -> None:
    poster = Poster()
    channel = SocketChannel(Directory(alice=["a1", "a2"], bob=["b1"]), poster)
    channel.send("alice", done_frame("s1", 2, {"usage": {}}))
    assert sorted(connection for connection, _ in poster.posted) == ["a1", "a2"]


def test_a_gone_connection_is_deleted_and_no_longer_pushed_to_and_the_caller_never_fails() -> None:
    directory, poster = Directory(alice=["a1", "gone"]), Poster(gone=("gone",))
    channel = SocketChannel(directory, poster, refresh_s=3600)
    channel.send("alice", delta(0, "工程"))
    channel.send("alice", delta(2, "を"))
    channel.send("alice", done_frame("s1", 2, {}))
    assert directory.removed == ["gone"] and channel.counts.gone == 1  # tried once, never again
    assert {c for c, _ in poster.posted} == {"a1"}
    assert "".join(str(body.get("text", "")) for _, body in poster.posted) == "工程を"
    assert poster.posted[-1][1]["type"] == "done"


def test_a_slow_endpoint_never_holds_the_caller_and_the_deltas_behind_it_merge_without_loss() -> None:
    poster = Poster()
    poster.release.clear()  # @connections hangs
    channel = SocketChannel(Directory(alice=["a1"]), poster)
    channel.send("alice", delta(0, "工"))
    assert poster.blocked.wait(5)  # the sender is stuck in its first post ...
    for offset, text in enumerate("程を整理", start=1):
        channel.send("alice", delta(offset, text))  # ... and the stream goes on regardless
    poster.release.set()
    channel.send("alice", done_frame("s1", 2, {}))
    texts = [body.get("text") for _, body in poster.posted]
    assert texts == ["工", "程を整理", None]  # four deltas queued behind it went as one


def test_an_answers_last_frame_returns_only_once_everything_queued_before_it_is_posted() -> None:
    poster = Poster()
    channel = SocketChannel(Directory(alice=["a1"]), poster)
    for index in range(5):
        channel.send("alice", DeltaFrame(sessionId=f"s{index}", seq=1, offset=0, text="x"))
    channel.send("alice", error_frame("MODEL_UNAVAILABLE", "send it again", session_id="s9"))
    assert [body["type"] for _, body in poster.posted] == ["delta"] * 5 + ["error"]


def test_an_endpoint_that_fails_is_counted_and_the_other_connections_still_get_the_frame() -> None:
    poster = Poster(failing=("a1",))
    channel = SocketChannel(Directory(alice=["a1", "a2"]), poster)
    channel.send("alice", done_frame("s1", 2, {}))
    assert channel.counts.failed == 1 and [c for c, _ in poster.posted] == ["a2"]


def test_a_flush_that_cannot_finish_gives_up_after_its_timeout_and_the_frame_is_not_lost_to_the_caller() -> None:
    poster = Poster()
    poster.release.clear()
    channel = SocketChannel(Directory(alice=["a1"]), poster, flush_timeout_s=0.05)
    channel.send("alice", done_frame("s1", 2, {}))  # returns: the endpoint is stuck, the function goes on
    poster.release.set()
    channel.flush()
    assert [body["type"] for _, body in poster.posted] == ["done"]


def test_a_connection_list_is_read_again_for_an_answers_last_frame() -> None:
    directory, poster = Directory(alice=["a1"]), Poster()
    channel = SocketChannel(directory, poster, refresh_s=3600)
    channel.send("alice", delta(0, "工"))
    channel.flush()
    directory.connections["alice"].append("a2")  # the client reconnected meanwhile
    channel.send("alice", done_frame("s1", 2, {}))
    assert [c for c, _ in poster.posted] == ["a1", "a1", "a2"]
    assert encoded(done_frame("s1", 2, {})) == json.dumps(poster.posted[-1][1], ensure_ascii=False).encode()


def test_a_frame_over_128_kb_is_never_posted() -> None:
    poster = Poster()
    channel = SocketChannel(Directory(alice=["a1"]), poster)
    channel.send("alice", DeltaFrame(sessionId="s1", seq=2, offset=0, text="x" * (129 * 1024)))
    channel.send("alice", done_frame("s1", 2, {}))
    assert [body["type"] for _, body in poster.posted] == ["done"] and channel.counts.dropped == 1


def test_a_gone_connection_whose_delete_fails_still_leaves_the_others_their_frame() -> None:
    class FailingDelete(Directory):
        def remove(self, connection_id: str) -> None:
            raise RuntimeError("the connections table is unavailable")

    poster = Poster(gone=("a0",))
    channel = SocketChannel(FailingDelete(alice=["a0", "a1"]), poster, refresh_s=3600)
    channel.send("alice", delta(0, "工"))
    channel.send("alice", delta(1, "程"))
    channel.flush()
    assert {c for c, _ in poster.posted} == {"a1"} and "".join(str(b["text"]) for _, b in poster.posted) == "工程"
    assert channel.counts.gone == 1  # the gone one is not tried again


def test_an_answers_first_frame_reads_the_connections_again_for_a_client_connected_since_the_last() -> None:
    directory, poster = Directory(alice=[]), Poster()
    channel = SocketChannel(directory, poster, refresh_s=3600)
    channel.send("alice", done_frame("s1", 2, {}))  # nobody connected: posted to no one
    directory.connections["alice"] = ["a1"]  # the user connects, and asks again
    channel.send("alice", delta(0, "工").model_copy(update={"seq": 4}))
    channel.flush()
    assert [(c, body["type"], body["seq"]) for c, body in poster.posted] == [("a1", "delta", 4)]
