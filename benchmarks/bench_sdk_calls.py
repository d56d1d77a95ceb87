"""Benchmark: our process's CPU per AWS call, for the crawl's most frequent call shapes, through `AwsClients`.

Run: python benchmarks/bench_sdk_calls.py [--calls 400] [--only getitem,send] [--profile]

The throughput benchmark says the AWS SDK is about a quarter of the crawler's own CPU; this one says what one
call costs us (not the emulator: it runs in its own process) with the worker's client configuration and call
meter: a single GetItem, an UpdateItem answering ALL_NEW, a BatchGetItem of 100 projected keys, a
BatchExecuteStatement of 25 conditional INSERTs, a SendMessageBatch of 10 frontier-sized bodies, a
ReceiveMessage(10) + DeleteMessageBatch(10) pair, and a 20 KB PutObject. `--profile` adds where that CPU goes,
grouped by layer (signing, hooks, serialisation, parsing, aiohttp, the call meter, the event loop). Run it on two
commits (or two SDK versions) to see what a change to the call path saves.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import time
from collections import Counter
from collections.abc import Awaitable, Callable

import boto3

from infra.local.moto_server import start_moto_server
from seolens_core.adapters._aws import AwsClients
from seolens_core.adapters._metering import CallMeter

TABLE, QUEUE, BUCKET = "bench-urls", "bench-frontier", "bench-results"
BODY = '{"u":"http://127.0.0.1:8080/section-%d/page-%d.html","c":"c0ffee","d":4,"p":"0123456789abcdef"}'

LAYERS = (
    ("/botocore/auth.py", "signing (SigV4)"),
    ("/botocore/signers.py", "signing (SigV4)"),
    ("/aiobotocore/signers.py", "signing (SigV4)"),
    ("/botocore/serialize.py", "serialisation"),
    ("/botocore/parsers.py", "parsing"),
    ("/aiobotocore/parsers.py", "parsing"),
    ("/botocore/regions.py", "endpoint rules"),
    ("/aiobotocore/regions.py", "endpoint rules"),
    ("/botocore/endpoint_provider.py", "endpoint rules"),
    ("/botocore/retries", "retries"),
    ("/aiobotocore/retries", "retries"),
    ("/botocore/hooks.py", "event hooks"),
    ("/aiobotocore/hooks.py", "event hooks"),
    ("/botocore/awsrequest.py", "request objects"),
    ("/aiohttp/", "aiohttp"),
    ("/yarl/", "aiohttp"),
    ("/multidict/", "aiohttp"),
    ("seolens_core/adapters/_metering.py", "call meter"),
    ("seolens_core/adapters/_stored_units.py", "call meter"),
    ("/asyncio/", "event loop"),
    ("selectors.py", "event loop"),
    ("/json/", "JSON"),
    ("/email/", "request objects"),
    ("/botocore/", "botocore, other"),
    ("/aiobotocore/", "aiobotocore, other"),
)


def _layer(filename: str, function: str = "") -> str:
    if filename == "~":  # a built-in: socket calls are I/O, the rest is called from the layers above
        return "socket I/O" if "socket" in function or "epoll" in function else "built-ins"
    for needle, name in LAYERS:
        if needle in filename:
            return name
    return "other"


def _resources(endpoint: str) -> str:
    ddb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    ddb.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "crawl_id", "AttributeType": "S"},
            {"AttributeName": "url_key", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "crawl_id", "KeyType": "HASH"},
            {"AttributeName": "url_key", "KeyType": "RANGE"},
        ],
    )
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=BUCKET)
    sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1")
    return str(sqs.create_queue(QueueName=QUEUE)["QueueUrl"])


def _key(i: int) -> dict[str, dict[str, str]]:
    return {"crawl_id": {"S": "bench"}, "url_key": {"S": f"{i:032x}"}}


def _shapes(aws: AwsClients, queue_url: str) -> dict[str, Callable[[int], Awaitable[object]]]:
    async def getitem(i: int) -> object:
        return await aws.dynamodb.get_item(TableName=TABLE, Key=_key(i % 100))

    async def update(i: int) -> object:
        return await aws.dynamodb.update_item(
            TableName=TABLE,
            Key=_key(i % 100),
            UpdateExpression="SET url_state = :s, lease_until = :l",
            ExpressionAttributeValues={":s": {"S": "fetching"}, ":l": {"N": repr(time.time() + 90)}},
            ReturnValues="ALL_NEW",
        )

    async def batchget(i: int) -> object:
        keys = [_key(j) for j in range(100)]
        return await aws.dynamodb.batch_get_item(
            RequestItems={TABLE: {"Keys": keys, "ProjectionExpression": "url_key, url_state, claimed_by"}}
        )

    async def claims(i: int) -> object:
        statements = [
            {
                "Statement": f"INSERT INTO \"{TABLE}\" VALUE {{'crawl_id': ?, 'url_key': ?, 'url_state': ?}}",
                "Parameters": [{"S": "bench"}, {"S": f"{i:016x}{j:016x}"}, {"S": "queued"}],
            }
            for j in range(25)
        ]
        return await aws.dynamodb.batch_execute_statement(Statements=statements)

    async def send(i: int) -> object:
        entries = [{"Id": str(j), "MessageBody": BODY % (i, j)} for j in range(10)]
        return await aws.sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)

    async def receive_delete(i: int) -> object:
        answer = await aws.sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)
        handles = [m["ReceiptHandle"] for m in answer.get("Messages", [])]
        if not handles:
            raise RuntimeError("the queue ran dry: run `send` first, with at least as many calls")
        entries = [{"Id": str(j), "ReceiptHandle": h} for j, h in enumerate(handles)]
        return await aws.sqs.delete_message_batch(QueueUrl=queue_url, Entries=entries)

    async def put(i: int) -> object:
        return await aws.s3.put_object(Bucket=BUCKET, Key=f"parts/{i:08d}", Body=b"x" * 20_000)

    return {
        "getitem": getitem,
        "update": update,
        "batchget": batchget,
        "claims": claims,
        "send": send,
        "receive_delete": receive_delete,
        "put": put,
    }


async def _measure(endpoint: str, queue_url: str, calls: int, only: list[str], profile: bool) -> None:
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    aws = await AwsClients(CallMeter()).open()
    try:
        shapes = _shapes(aws, queue_url)
        for name in only or list(shapes):
            shape = shapes[name]
            for i in range(20):  # warm: connections open, caches filled
                await shape(i)
            profiler = cProfile.Profile(time.process_time) if profile else None
            cpu, wall = time.process_time(), time.perf_counter()
            if profiler is not None:
                profiler.enable()
            for i in range(calls):
                await shape(i)
            if profiler is not None:
                profiler.disable()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            api_calls = 2 if name == "receive_delete" else 1
            print(
                f"{name:15s} {cpu / calls / api_calls * 1000:6.3f} ms of our CPU an API call"
                f"  ({wall / calls / api_calls * 1000:5.2f} ms wall)",
                flush=True,
            )
            if profiler is not None:
                _print_layers(profiler)
    finally:
        await aws.close()


def _print_layers(profiler: cProfile.Profile) -> None:
    """CPU self time by layer, as shares of the profiled CPU (the profiler's clock is process time)."""
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    by_layer: Counter[str] = Counter()
    for (filename, _, function), (_, _, tottime, _, _) in stats.items():
        by_layer[_layer(filename, function)] += tottime
    total = sum(by_layer.values()) or 1.0
    print("    " + ", ".join(f"{name} {t / total:.0%}" for name, t in by_layer.most_common()))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=400, help="calls a shape (after 20 warm-up calls)")
    parser.add_argument("--only", default="", help="comma-separated shapes (default: all, in order)")
    parser.add_argument("--profile", action="store_true", help="also print where the CPU goes, by layer")
    args = parser.parse_args()
    moto = start_moto_server()
    moto.wait_ready()
    try:
        queue_url = _resources(moto.endpoint_url)
        only = [name for name in args.only.split(",") if name]
        asyncio.run(_measure(moto.endpoint_url, queue_url, args.calls, only, args.profile))
    finally:
        moto.stop()


if __name__ == "__main__":
    main()
