"""`make serve`'s WebSocket API is as strict as API Gateway's: 32 KB a frame and 128 KB a message
from the client (closed with 1009), a longer message to the client sent in frames of 32 KB, 128 KB at
most through ``@connections`` (413), which takes only SigV4-signed calls and answers 410 for a
connection that is gone, and the idle limit (10 minutes, on the runner's time scale) closing with
1001 and running ``$disconnect``. The real ``websockets`` client and boto3's management client."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from types import SimpleNamespace

import boto3
import pytest
from botocore.exceptions import ClientError
from websockets.exceptions import ConcurrencyError, ConnectionClosed

from devtools.runner import LocalRunner
from devtools.runner_api import HttpRequest
from devtools.runner_socket import Connection, SocketGateway, SocketRoutes
from tests.support.socket_clients import served_runner, socket

SCALE = 0.005  # 10 minutes idle: 3 s; 2 hours: 36 s


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[LocalRunner, str]]:
    with served_runner(PRODUCT_TIME_SCALE=str(SCALE)) as it:
        yield it


def management(runner: LocalRunner) -> object:
    assert runner.sockets is not None
    return boto3.client(
        "apigatewaymanagementapi",
        endpoint_url=runner.sockets.endpoint,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


def connection_of(runner: LocalRunner, user: str) -> str:
    items = runner.aws.client("dynamodb").scan(TableName="ConnectionsTable")["Items"]
    (found,) = [item["connectionId"]["S"] for item in items if item["userId"]["S"] == user]
    return str(found)


def test_a_frame_over_32_kb_from_the_client_closes_the_connection_with_1009(served: tuple[LocalRunner, str]) -> None:
    with socket(served[1], "ivan") as ws:
        ws.send("x" * (32 * 1024 + 1))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=60)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


def test_a_message_over_128_kb_in_frames_of_32_kb_closes_it_with_1009_and_one_under_it_is_taken(
    served: tuple[LocalRunner, str],
) -> None:
    chunk = "x" * (32 * 1024)
    with socket(served[1], "judy") as ws:
        ws.send([chunk] * 3)  # 96 KB in three frames: a message API Gateway takes
        assert json.loads(ws.recv(timeout=60))["error"]["code"] == "UNKNOWN_ACTION"
        with pytest.raises(ConnectionClosed) as closed:
            ws.send([chunk] * 5)  # 160 KB: closed while it is sent, or once it is
            ws.recv(timeout=60)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


def test_a_long_message_posted_arrives_in_frames_of_at_most_32_kb_and_one_over_128_kb_is_refused(
    served: tuple[LocalRunner, str],
) -> None:
    runner, url = served
    client = management(runner)
    with socket(url, "ken") as ws:
        connection = connection_of(runner, "ken")
        client.post_to_connection(ConnectionId=connection, Data=b"y" * (100 * 1024))  # type: ignore[attr-defined]
        frames = list(ws.recv_streaming(decode=False))
        with pytest.raises(ClientError) as refused:
            client.post_to_connection(ConnectionId=connection, Data=b"y" * (128 * 1024 + 1))  # type: ignore[attr-defined]
    assert b"".join(frames) == b"y" * (100 * 1024) and max(len(f) for f in frames) <= 32 * 1024 and len(frames) >= 4
    assert refused.value.response["Error"]["Code"] == "PayloadTooLargeException"


def test_a_long_message_posted_arrives_as_text_as_a_browser_parses_it(served: tuple[LocalRunner, str]) -> None:
    runner, url = served
    posted = json.dumps({"text": "é" * (40 * 1024)}, ensure_ascii=False)  # 80 KB: three frames, one split mid-letter
    with socket(url, "kim") as ws:
        management(runner).post_to_connection(ConnectionId=connection_of(runner, "kim"), Data=posted.encode())  # type: ignore[attr-defined]
        received = ws.recv(timeout=60)
    assert received == posted  # a text message (str), not a binary one a page's JSON.parse cannot read


class OneSendAtATime:
    """A socket that refuses a send while another is under way, as a websockets connection does
    mid-message; the first send waits until the test lets it end."""

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.busy = False
        self.refused: list[object] = []
        self.sent: list[object] = []

    def send(self, message: object, text: bool | None = None) -> None:
        if self.busy:
            self.refused.append(message)
            raise ConcurrencyError("cannot call send while another thread is already running send")
        self.busy = True
        self.entered.set()
        self.release.wait(60)
        self.sent.append(message)
        self.busy = False


def test_a_post_while_another_is_being_sent_waits_its_turn_as_api_gateway_queues_it() -> None:
    routes = SocketRoutes(stage="v1", functions={}, two_way=frozenset(), authorizer=None)
    gateway = SocketGateway(SimpleNamespace(region="us-east-1"), routes, "http://127.0.0.1:1/v1")
    wire = OneSendAtATime()
    now = time.monotonic()
    connection = Connection("c=", "olga", {}, wire, time.time(), now, now, "127.0.0.1")  # type: ignore[arg-type]
    first = threading.Thread(target=gateway.answer, args=(posted(connection.id, "first"),))
    second = threading.Thread(target=gateway.answer, args=(posted(connection.id, "second"),))
    gateway._connections[connection.id] = connection
    first.start()
    assert wire.entered.wait(60)
    second.start()
    second.join(1.0)  # on a busy machine the second may not have tried yet: then this proves less, never fails
    wire.release.set()
    first.join(60)
    second.join(60)
    assert wire.refused == [] and sorted(map(str, wire.sent)) == ["first", "second"]


def posted(connection_id: str, text: str) -> HttpRequest:
    signed = "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/execute-api/aws4_request, SignedHeaders=host"
    return HttpRequest("POST", f"/v1/@connections/{connection_id}", "", [("Authorization", signed)], text.encode())


def test_connections_takes_only_signed_calls_and_answers_410_for_a_gone_connection(
    served: tuple[LocalRunner, str],
) -> None:
    runner = served[0]
    with pytest.raises(ClientError) as gone:
        management(runner).post_to_connection(ConnectionId="nobody=", Data=b"{}")  # type: ignore[attr-defined]
    assert gone.value.response["Error"]["Code"] == "GoneException"
    assert gone.value.response["ResponseMetadata"]["HTTPStatusCode"] == 410
    assert runner.sockets is not None
    unsigned = urllib.request.Request(f"{runner.sockets.endpoint}/@connections/nobody%3D", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(unsigned, timeout=30)
    assert refused.value.code == 403


def test_connections_refuses_a_call_signed_for_another_region_as_api_gateway_does(
    served: tuple[LocalRunner, str],
) -> None:
    runner = served[0]
    assert runner.sockets is not None
    elsewhere = boto3.client(
        "apigatewaymanagementapi",
        endpoint_url=runner.sockets.endpoint,
        region_name="eu-west-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    with pytest.raises(ClientError) as refused:
        elsewhere.post_to_connection(ConnectionId="nobody=", Data=b"{}")
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert refused.value.response["Error"]["Code"] == "InvalidSignatureException"


def test_an_idle_connection_is_closed_with_1001_and_disconnected(served: tuple[LocalRunner, str]) -> None:
    runner, url = served
    with socket(url, "leo") as ws:
        assert connection_of(runner, "leo")
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=120)  # nothing is said: the idle limit (on the time scale) ends it
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
    assert connections_left_after_disconnect(runner, "leo") == []


def connections_left_after_disconnect(runner: LocalRunner, user: str) -> list[object]:
    """As on API Gateway, ``$disconnect`` runs after the close frame is sent, so the client may see the
    close before the row is gone: wait for it, within a bound a busy machine still meets."""
    deadline = time.monotonic() + 60
    while True:
        items = runner.aws.client("dynamodb").scan(TableName="ConnectionsTable")["Items"]
        left = [item for item in items if item["userId"]["S"] == user]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)
