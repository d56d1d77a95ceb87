"""Benchmark: the embedded emulator's CPU per call for the crawl's most frequent DynamoDB shapes.

Run: python benchmarks/bench_emulator_ops.py [--updates 1500] [--pending 3000] [--queries 30]
    [--queue-depth 10000] [--receives 200] [--claims 10000]

Starts the embedded moto server (with `infra/local/moto_patches.py`) and measures its process CPU (from /proc)
around: pacing-shaped UpdateItems (reserve two leases on a host item, then release them with an observation),
Queries of a sparse `pending` index holding `--pending` URLs (the progress check's question), and
ReceiveMessage(10) + DeleteMessageBatch(10) on a queue `--queue-depth` messages deep (a crawl's frontier
holds most of the URLs it has found and not fetched yet), and `--claims` URL items created by conditional INSERTs in
BatchExecuteStatements of 25 and then read by BatchGetItem of 100 (the visited set's writes and existence checks,
most of the emulator's work while a crawl discovers its site). Run it on
two commits to see what an emulator patch saves; the crawl benchmarks carry too much noise for that.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import boto3

from infra.local.moto_server import start_moto_server
from seolens_core.adapters.urls import BATCH_MAX_STATEMENTS, STATE_PROJECTION, UrlStore
from seolens_core.frontier import FrontierMessage
from seolens_core.urls import url_key_hex

TICK = os.sysconf("SC_CLK_TCK")


def emulator_cpu_s() -> float:
    """CPU seconds of every process running the embedded moto server."""
    total = 0.0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if b"moto_server.py" not in fh.read():
                    continue
            with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICK
    return total


def _tables(ddb: Any, pending: int) -> None:
    ddb.create_table(
        TableName="hosts",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
    )
    ddb.put_item(
        TableName="hosts",
        Item={"k": {"S": "h"}, "leases": {"M": {}}, "obs": {"L": []}, "next_allowed_at": {"N": "1"}},
    )
    ddb.create_table(
        TableName="urls",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("c", "k", "p")],
        KeySchema=[{"AttributeName": "c", "KeyType": "HASH"}, {"AttributeName": "k", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "pending",
                "KeySchema": [
                    {"AttributeName": "p", "KeyType": "HASH"},
                    {"AttributeName": "k", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["url"]},
            }
        ],
    )
    puts = [
        {"PutRequest": {"Item": {"c": {"S": "C"}, "k": {"S": f"{i * 7919 % 10**8:08x}"}, "p": {"S": "C"}}}}
        for i in range(pending)
    ]
    for start in range(0, len(puts), 25):
        ddb.batch_write_item(RequestItems={"urls": puts[start : start + 25]})


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--updates", type=int, default=1500, help="reserve + release pairs")
    parser.add_argument("--pending", type=int, default=3000)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--queue-depth", type=int, default=10_000)
    parser.add_argument("--receives", type=int, default=200)
    parser.add_argument("--claims", type=int, default=10_000)
    args = parser.parse_args()
    server = start_moto_server()
    try:
        ddb = boto3.client("dynamodb", endpoint_url=server.endpoint_url, region_name="us-east-1")
        _tables(ddb, args.pending)
        key = {"k": {"S": "h"}}
        started = emulator_cpu_s()
        for i in range(args.updates):
            names = {"#l0": f"a{i}", "#l1": f"b{i}"}
            ddb.update_item(
                TableName="hosts",
                Key=key,
                UpdateExpression="SET leases.#l0 = next_allowed_at + :o0, leases.#l1 = next_allowed_at + :o1",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={":o0": {"N": "1"}, ":o1": {"N": "2"}},
            )
            ddb.update_item(
                TableName="hosts",
                Key=key,
                UpdateExpression="REMOVE leases.#l0, leases.#l1 SET obs = :o",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={":o": {"L": [{"N": str(i % 50)}]}},
            )
        updated = emulator_cpu_s()
        for _ in range(args.queries):
            ddb.query(
                TableName="urls",
                IndexName="pending",
                KeyConditionExpression="p = :c",
                ExpressionAttributeValues={":c": {"S": "C"}},
                Limit=101,
            )
        queried = emulator_cpu_s()
        claim_s, check_s = _claims(ddb, args.claims)
        sqs = boto3.client("sqs", endpoint_url=server.endpoint_url, region_name="us-east-1")
        receive_s, delete_s = _receive_and_delete_at_depth(sqs, args.queue_depth, args.receives)
    finally:
        server.stop()
    print(
        f"UpdateItem (pacing shape): {(updated - started) / (2 * args.updates) * 1000:.2f} ms emulator CPU a call"
    )
    print(
        f"Query of the pending index at {args.pending} pending: "
        f"{(queried - updated) / args.queries * 1000:.1f} ms emulator CPU a call"
    )
    print(
        f"URL claims: BatchExecuteStatement (INSERTs) {claim_s / args.claims * 1000:.3f} ms, "
        f"BatchGetItem {check_s / args.claims * 1000:.3f} ms emulator CPU an item ({args.claims} items)"
    )
    print(
        f"At a queue depth of {args.queue_depth}: ReceiveMessage(10) {receive_s / args.receives * 1000:.2f} ms, "
        f"DeleteMessageBatch(10) {delete_s / args.receives * 1000:.2f} ms emulator CPU a call"
    )


def _claims(ddb: Any, count: int) -> tuple[float, float]:
    """Emulator CPU seconds to create `count` URL items with the crawler's own claim requests (`UrlStore`: a
    conditional INSERT each, `BATCH_MAX_STATEMENTS` to a BatchExecuteStatement) and then to read them back
    as its existence checks do (BatchGetItem of 100 keys, `STATE_PROJECTION`)."""
    ddb.create_table(
        TableName="claims",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("crawl_id", "url_key")],
        KeySchema=[
            {"AttributeName": "crawl_id", "KeyType": "HASH"},
            {"AttributeName": "url_key", "KeyType": "RANGE"},
        ],
    )
    store = UrlStore(client=None, table="claims")
    urls = [f"http://127.0.0.1:8000/p/{i}.html" for i in range(count)]
    messages = [
        FrontierMessage(crawl_id="C", url=url, key=url_key_hex(url), depth=1, sitemap=True) for url in urls
    ]
    batches = [messages[i : i + BATCH_MAX_STATEMENTS] for i in range(0, count, BATCH_MAX_STATEMENTS)]
    before = emulator_cpu_s()
    for batch in batches:
        ddb.batch_execute_statement(Statements=[store._insert(m, "127.0.0.1:8000", 1.8e9) for m in batch])
    claimed = emulator_cpu_s()
    for chunk in (messages[start : start + 100] for start in range(0, count, 100)):
        ddb.batch_get_item(
            RequestItems={
                "claims": {
                    "Keys": [{"crawl_id": {"S": m.crawl_id}, "url_key": {"S": m.key}} for m in chunk],
                    "ProjectionExpression": STATE_PROJECTION,
                }
            }
        )
    return claimed - before, emulator_cpu_s() - claimed


def _receive_and_delete_at_depth(sqs: Any, depth: int, receives: int) -> tuple[float, float]:
    """Emulator CPU seconds of `receives` ReceiveMessage(10) and of as many DeleteMessageBatch(10) of what
    each returned, on a queue `depth` messages deep (kept at that depth: each batch is sent again)."""
    url = sqs.create_queue(QueueName="frontier", Attributes={"VisibilityTimeout": "60"})["QueueUrl"]
    body = "x" * 300  # about a frontier message's size
    for start in range(0, depth, 10):
        sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": body} for i in range(min(10, depth - start))]
        )
    receive_s = delete_s = 0.0
    for _ in range(receives):
        before = emulator_cpu_s()
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
        received = emulator_cpu_s()
        sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
        )
        deleted = emulator_cpu_s()
        receive_s += received - before
        delete_s += deleted - received
        sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": body} for i in range(len(messages))]
        )
    return receive_s, delete_s


if __name__ == "__main__":
    main()
