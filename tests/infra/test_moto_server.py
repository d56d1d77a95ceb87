"""The embedded emulator's server: connections kept between calls, long polls never starve other calls."""

from __future__ import annotations

import io
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


def _volatile_dropped(value: object) -> object:
    """A JSON answer without what differs between two identical calls (ids, handles, clocks)."""
    volatile = {"MessageId", "ReceiptHandle", "CreationDateTime", "TableId", "SentTimestamp", "RequestId"}
    volatile |= {"ApproximateFirstReceiveTimestamp", "CreatedTimestamp", "LastModifiedTimestamp"}
    if isinstance(value, dict):
        return {k: _volatile_dropped(v) for k, v in value.items() if k not in volatile}
    if isinstance(value, list):
        return [_volatile_dropped(v) for v in value]
    return value


def _json_calls(name: str) -> list[tuple[str, str, dict[str, object]]]:
    """(service target, operation, body) of a scenario on a table and a queue named `name`: successes, failed
    conditions, a cancelled transaction, unknown resources and a malformed request."""
    table, key = f"t-{name}", {"k": {"S": "a"}}
    queue = f"http://localhost:5000/123456789012/q-{name}"
    return [
        (
            "DynamoDB_20120810",
            "CreateTable",
            {
                "TableName": table,
                "BillingMode": "PAY_PER_REQUEST",
                "AttributeDefinitions": [{"AttributeName": "k", "AttributeType": "S"}],
                "KeySchema": [{"AttributeName": "k", "KeyType": "HASH"}],
            },
        ),
        ("DynamoDB_20120810", "PutItem", {"TableName": table, "Item": {**key, "n": {"N": "1"}}}),
        (
            "DynamoDB_20120810",
            "PutItem",
            {
                "TableName": table,
                "Item": key,
                "ConditionExpression": "attribute_not_exists(k)",
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            },
        ),
        (
            "DynamoDB_20120810",
            "UpdateItem",
            {
                "TableName": table,
                "Key": key,
                "UpdateExpression": "SET n = n + :one",
                "ExpressionAttributeValues": {":one": {"N": "1"}},
                "ReturnValues": "ALL_NEW",
            },
        ),
        (
            "DynamoDB_20120810",
            "TransactWriteItems",
            {
                "TransactItems": [
                    {"Put": {"TableName": table, "Item": {"k": {"S": "b"}}}},
                    {
                        "ConditionCheck": {
                            "TableName": table,
                            "Key": key,
                            "ConditionExpression": "n = :z",
                            "ExpressionAttributeValues": {":z": {"N": "0"}},
                        }
                    },
                ]
            },
        ),
        ("DynamoDB_20120810", "GetItem", {"TableName": table, "Key": key, "ConsistentRead": True}),
        (
            "DynamoDB_20120810",
            "Query",
            {
                "TableName": table,
                "KeyConditionExpression": "k = :k",
                "ExpressionAttributeValues": {":k": {"S": "a"}},
            },
        ),
        ("DynamoDB_20120810", "GetItem", {"TableName": f"missing-{name}", "Key": key}),
        ("DynamoDB_20120810", "UpdateItem", {"TableName": table, "Key": key, "UpdateExpression": "SET = 1"}),
        ("AmazonSQS", "CreateQueue", {"QueueName": f"q-{name}"}),
        (
            "AmazonSQS",
            "SendMessageBatch",
            {
                "QueueUrl": queue,
                "Entries": [
                    {"Id": "1", "MessageBody": "one"},
                    {"Id": "2", "MessageBody": "two", "DelaySeconds": 900},
                ],
            },
        ),
        ("AmazonSQS", "ReceiveMessage", {"QueueUrl": queue, "MaxNumberOfMessages": 10}),
        (
            "AmazonSQS",
            "DeleteMessageBatch",
            {"QueueUrl": queue, "Entries": [{"Id": "x", "ReceiptHandle": "bad"}]},
        ),
        ("AmazonSQS", "GetQueueAttributes", {"QueueUrl": queue, "AttributeNames": ["DelaySeconds"]}),
        ("AmazonSQS", "ReceiveMessage", {"QueueUrl": f"{queue}-missing"}),
    ]


def test_json_calls_answer_as_through_motos_flask_app() -> None:
    """DynamoDB and SQS calls handed straight to their handlers answer exactly as moto's Flask app does:
    status, content type, body (ids and clocks aside) and the DynamoDB checksum header, errors included."""
    import json

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.test import Client

    from infra.local import moto_patches

    moto_patches.apply()
    flask_app = DomainDispatcherApplication(create_backend_app)
    answers = {}
    for name, app in (("flask", flask_app), ("direct", moto_server_module._json_calls_direct(flask_app))):
        client, got = Client(app), []
        for target, operation, body in _json_calls(name):
            service = "dynamodb" if target.startswith("DynamoDB") else "sqs"
            resp = client.post(
                "/",
                data=json.dumps(body),
                headers={
                    "X-Amz-Target": f"{target}.{operation}",
                    "Content-Type": "application/x-amz-json-1.0",
                    "Host": "localhost:5000",
                    "Authorization": f"AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/20260101/us-east-1/{service}/aws4_request",
                },
            )
            text = resp.get_data(as_text=True).replace(name, "NAME")
            parsed = _volatile_dropped(json.loads(text)) if text.startswith("{") else text
            got.append(
                (
                    operation,
                    resp.status_code,
                    resp.headers.get("Content-Type"),
                    parsed,
                    "x-amz-crc32" in resp.headers,
                )
            )
        answers[name] = got
    assert answers["direct"] == answers["flask"]
    statuses = [status for _, status, *_ in answers["flask"]]
    assert 200 in statuses and statuses.count(400) >= 4  # both kinds of answer were compared


def test_warm_builds_the_backends_requests_for_those_services_are_routed_to() -> None:
    """The warm-up must fill the keys the router looks up (moto names Lambda's backend `awslambda` and Step
    Functions' `stepfunctions`): a request for a warmed service then finds its app built."""
    from moto.server import DomainDispatcherApplication, create_backend_app  # type: ignore[attr-defined]

    app = DomainDispatcherApplication(create_backend_app)
    moto_server_module._warm(app)
    assert set(app.app_instances) == {"cloudformation", "s3", "sqs", "dynamodb", "awslambda", "stepfunctions"}
    for prefix in moto_server_module.WARM_SERVICES:
        environ = {  # as the SDK signs a call to the service (the emulator's endpoint is 127.0.0.1)
            "HTTP_HOST": "127.0.0.1",
            "HTTP_AUTHORIZATION": f"AWS4-HMAC-SHA256 Credential=testing/20261203/us-east-1/{prefix}/aws4_request",
            "HTTP_X_AMZ_TARGET": "DynamoDB_20120810.ListTables" if prefix == "dynamodb" else "",
            "PATH_INFO": "/",
            "REQUEST_METHOD": "POST",
            "wsgi.input": io.BytesIO(b""),
        }
        before = dict(app.app_instances)
        assert app.get_application(environ) in before.values()
        assert app.app_instances == before


def test_a_launched_server_is_waited_for_once_then_serves() -> None:
    """`launch_moto_server` returns at once (the CLI imports meanwhile); `wait_ready` blocks until it listens."""
    server = moto_server_module.launch_moto_server()
    try:
        assert server.wait_ready() is server
        assert server.wait_ready() is server  # a second wait does not probe again
        client = boto3.client(
            "dynamodb",
            endpoint_url=server.endpoint_url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        assert client.list_tables()["TableNames"] == []
    finally:
        server.stop()
