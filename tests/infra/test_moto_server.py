"""The embedded emulator's server: connections kept between calls, long polls never starve other calls."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import boto3

from infra.local import moto_server as moto_server_module
from infra.local.moto_server import EmbeddedMoto

LIST_TABLES = (
    b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Amz-Target: DynamoDB_20120810.ListTables\r\n"
    b"Content-Type: application/x-amz-json-1.0\r\nAuthorization: AWS4-HMAC-SHA256 "
    b"Credential=testing/20261201/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0\r\n"
    b"Content-Length: 2\r\n\r\n{}"
)


def _answer(sock: socket.socket) -> tuple[bytes, bytes]:
    """One HTTP answer read off `sock`: (head, body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "connection closed before an answer"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "connection closed inside an answer"
        body += chunk
    return head, body


def test_one_connection_carries_many_calls(moto_server: EmbeddedMoto) -> None:
    """werkzeug closed the connection after every answer: each AWS call paid a new connection on both sides."""
    with socket.create_connection(("127.0.0.1", moto_server.port), timeout=10) as sock:
        for _ in range(3):
            sock.sendall(LIST_TABLES)
            head, body = _answer(sock)
            assert head.startswith(b"HTTP/1.1 200")
            assert b"connection: close" not in head.lower()
            assert b"TableNames" in body


def test_long_polls_do_not_hold_up_other_calls(moto_server: EmbeddedMoto) -> None:
    """Forty ReceiveMessage long polls wait on an empty queue (each holds a server thread); a message sent
    meanwhile is sent and received at once, not after the polls' 5 s (a server with fewer threads than
    waiting polls would queue the send behind them)."""
    sqs = boto3.client("sqs", endpoint_url=moto_server.endpoint_url, region_name="us-east-1")
    url = sqs.create_queue(QueueName=f"polls-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    got: list[str] = []

    def poll() -> None:
        client = boto3.client("sqs", endpoint_url=moto_server.endpoint_url, region_name="us-east-1")
        got.extend(
            m["Body"] for m in client.receive_message(QueueUrl=url, WaitTimeSeconds=5).get("Messages", [])
        )

    pollers = [threading.Thread(target=poll) for _ in range(40)]
    for t in pollers:
        t.start()
    time.sleep(1.0)  # the polls are waiting
    sent = time.monotonic()
    sqs.send_message(QueueUrl=url, MessageBody="hello")
    while not got and time.monotonic() - sent < 10:
        time.sleep(0.05)
    assert got == ["hello"]
    assert time.monotonic() - sent < 3.0  # well inside the polls' 5 s wait
    for t in pollers:
        t.join(10)


def test_stopping_the_emulator_logs_nothing() -> None:
    """Stopping kills gunicorn's worker; its master used to log the kill as an error ("Worker was sent SIGKILL!
    Perhaps out of memory?") at the end of a user's crawl output, in about one stop of three."""
    from infra.local.moto_server import _free_port, _wait_for_port

    for _ in range(4):
        port = _free_port()
        proc = subprocess.Popen(
            [sys.executable, str(Path(moto_server_module.__file__).resolve()), "--serve", str(port)],
            stdin=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        )
        _wait_for_port(port, proc)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(LIST_TABLES)
            _answer(sock)
        _, err = proc.communicate(b"", timeout=20)
        assert proc.returncode == 0
        assert err.decode(errors="replace").strip() == ""


def test_a_request_cut_short_is_not_acted_on(moto_server: EmbeddedMoto) -> None:
    """A worker killed while uploading a results part: the emulator stored the part's first bytes (gunicorn hands
    a body cut short to the app as a short read) under the full body's checksum, and the report then failed to
    read it back. AWS never acts on a partial request."""
    s3 = boto3.client("s3", endpoint_url=moto_server.endpoint_url, region_name="us-east-1")
    bucket = f"cut-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    head = (
        f"PUT /{bucket}/part HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n"
        "Authorization: AWS4-HMAC-SHA256 Credential=testing/20261201/us-east-1/s3/aws4_request, "
        "SignedHeaders=host, Signature=0\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", moto_server.port), timeout=10) as sock:
        sock.sendall(head + b"0123456789")  # 10 of the 100 bytes, then the client is gone
    time.sleep(0.5)
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0
    s3.put_object(Bucket=bucket, Key="part", Body=b"x" * 100)  # a whole request still lands
    assert s3.get_object(Bucket=bucket, Key="part")["Body"].read() == b"x" * 100
