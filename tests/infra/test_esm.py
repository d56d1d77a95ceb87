"""The event-source-mapping emulator gathers batches as the Lambda service does (BatchSize over 10)."""

from __future__ import annotations

import uuid
from typing import Any

import boto3

from infra.local.esm import EventSourceMapping
from infra.local.moto_server import EmbeddedMoto
from tests.infra.conftest import REGION


def _queue(server: EmbeddedMoto, messages: int) -> tuple[Any, str, str]:
    sqs = boto3.client("sqs", endpoint_url=server.endpoint_url, region_name=REGION)
    url = sqs.create_queue(QueueName=f"esm-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    for start in range(0, messages, 10):
        sqs.send_message_batch(
            QueueUrl=url,
            Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(start, min(messages, start + 10))],
        )
    return sqs, url, arn


def _one_batch(server: EmbeddedMoto, *, messages: int, batch_size: int, window_s: float) -> list[str]:
    sqs, url, arn = _queue(server, messages)
    seen: list[list[str]] = []
    esm = EventSourceMapping(
        queue_url=url,
        queue_arn=arn,
        invoke=lambda event: seen.append([r["body"] for r in event["Records"]]),
        endpoint_url=server.endpoint_url,
        region=REGION,
        batch_size=batch_size,
        workers=1,
        batching_window_s=window_s,
    )
    assert esm._poll_once(sqs) == len(seen[0])
    return seen[0]


def test_a_batch_over_ten_is_gathered_from_several_receives(moto_server: EmbeddedMoto) -> None:
    batch = _one_batch(moto_server, messages=30, batch_size=25, window_s=1)
    assert len(batch) == 25 and len(set(batch)) == 25


def test_a_short_receive_ends_the_batch(moto_server: EmbeddedMoto) -> None:
    batch = _one_batch(moto_server, messages=13, batch_size=25, window_s=1)
    assert sorted(batch) == sorted(f"m{i}" for i in range(13))


def test_without_a_batching_window_one_receive_makes_the_batch(moto_server: EmbeddedMoto) -> None:
    assert len(_one_batch(moto_server, messages=30, batch_size=25, window_s=0)) == 10
