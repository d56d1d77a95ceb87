"""The event-source-mapping emulator gathers batches as the Lambda service does (BatchSize over 10)."""

from __future__ import annotations

import threading
import time
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


def _collecting(
    server: EmbeddedMoto, url: str, arn: str, seen: list[list[str]], **options: Any
) -> EventSourceMapping:
    """One poller whose invocations append their batch's bodies to `seen`."""
    return EventSourceMapping(
        queue_url=url,
        queue_arn=arn,
        invoke=lambda event: seen.append([r["body"] for r in event["Records"]]),
        endpoint_url=server.endpoint_url,
        region=REGION,
        workers=1,
        **options,
    )


def _one_batch(server: EmbeddedMoto, *, messages: int, batch_size: int, window_s: float) -> list[str]:
    sqs, url, arn = _queue(server, messages)
    seen: list[list[str]] = []
    esm = _collecting(server, url, arn, seen, batch_size=batch_size, batching_window_s=window_s)
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


def _thin_queue_batch(server: EmbeddedMoto, *, wait_out_window: bool) -> tuple[list[str], float]:
    """One batch of a queue holding 3 messages, 7 more sent 0.4 s into the 1 s window: (bodies, seconds)."""
    sqs, url, arn = _queue(server, 3)
    seen: list[list[str]] = []
    esm = _collecting(
        server, url, arn, seen, batch_size=25, batching_window_s=1, wait_out_window=wait_out_window
    )
    late = threading.Timer(
        0.4,
        lambda: sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"late{i}"} for i in range(7)]
        ),
    )
    started = time.monotonic()
    late.start()
    try:
        esm._poll_once(sqs)
        took = time.monotonic() - started
    finally:
        late.join()
    return seen[0], took


def test_waiting_out_the_window_a_thin_batch_takes_what_arrives_within_it(moto_server: EmbeddedMoto) -> None:
    batch, took = _thin_queue_batch(moto_server, wait_out_window=True)
    assert sorted(batch) == sorted([f"m{i}" for i in range(3)] + [f"late{i}" for i in range(7)])
    assert 0.9 <= took < 1.6


def test_by_default_a_thin_batch_goes_at_once(moto_server: EmbeddedMoto) -> None:
    batch, took = _thin_queue_batch(moto_server, wait_out_window=False)
    assert sorted(batch) == ["m0", "m1", "m2"] and took < 0.4


def _ahead_mapping(
    server: EmbeddedMoto, url: str, arn: str, invoke: Any, workers: int = 1, **options: Any
) -> EventSourceMapping:
    return EventSourceMapping(
        queue_url=url,
        queue_arn=arn,
        invoke=invoke,
        endpoint_url=server.endpoint_url,
        region=REGION,
        batch_size=10,
        workers=workers,
        receive_ahead=True,
        **options,
    )


def _event_source_cpu(server: EmbeddedMoto, *, invokes_elsewhere: bool) -> float:
    """The mapping's own CPU over 30 messages whose invocations each spin 0.1 s of CPU."""
    sqs, url, arn = _queue(server, 30)

    def invoke(event: dict[str, Any]) -> None:
        spin_until = time.thread_time() + 0.1
        while time.thread_time() < spin_until:
            pass

    esm = _ahead_mapping(server, url, arn, invoke, invokes_elsewhere=invokes_elsewhere)
    esm.start()
    deadline = time.monotonic() + 20
    while _visible(sqs, url) and time.monotonic() < deadline:
        time.sleep(0.1)
    esm.stop()
    assert _visible(sqs, url) == 0
    return esm.stats.cpu_s


def test_the_event_sources_own_cpu_is_counted_apart_from_the_functions(moto_server: EmbeddedMoto) -> None:
    # Invocations in the poller's thread (threads mode): the function's 0.3 s are not the service's.
    in_process = _event_source_cpu(moto_server, invokes_elsewhere=False)
    assert 0 < in_process < 0.3
    # A poller that hands its batches to another process: all it does is the service's (the stand-in invoke
    # spins in the poller itself here, so its 0.3 s show).
    assert _event_source_cpu(moto_server, invokes_elsewhere=True) >= 0.3


def _visible(sqs: Any, url: str) -> int:
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return int(attrs["ApproximateNumberOfMessages"]) + int(attrs["ApproximateNumberOfMessagesNotVisible"])


def test_received_ahead_every_message_is_invoked_once_and_deleted(moto_server: EmbeddedMoto) -> None:
    sqs, url, arn = _queue(moto_server, 95)
    seen: list[str] = []
    lock = threading.Lock()

    def invoke(event: dict[str, Any]) -> None:
        with lock:
            seen.extend(r["body"] for r in event["Records"])

    esm = _ahead_mapping(moto_server, url, arn, invoke, workers=3)
    esm.start()
    deadline = time.monotonic() + 30
    while (len(seen) < 95 or _visible(sqs, url)) and time.monotonic() < deadline:
        time.sleep(0.05)
    esm.stop()
    assert sorted(seen) == sorted(f"m{i}" for i in range(95))  # each once
    assert _visible(sqs, url) == 0  # every processed record deleted


def test_the_next_batch_is_received_during_an_invocation_and_returned_unused_at_stop(
    moto_server: EmbeddedMoto,
) -> None:
    sqs, url, arn = _queue(moto_server, 20)
    release = threading.Event()
    invoked: list[list[str]] = []

    def invoke(event: dict[str, Any]) -> None:
        invoked.append([r["body"] for r in event["Records"]])
        release.wait(10)

    esm = _ahead_mapping(moto_server, url, arn, invoke)
    esm.start()
    deadline = time.monotonic() + 10
    while not (invoked and esm._ahead[0].full()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (
        len(invoked) == 1 and esm._ahead[0].full()
    )  # the second batch waits, received, while the first runs
    stopping = threading.Thread(target=esm.stop)
    stopping.start()
    time.sleep(0.2)
    release.set()
    stopping.join(10)
    assert len(invoked) == 1
    left = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)["Messages"]
    # visible again at once (the queue's visibility timeout is 30 s), and only the unused batch is left
    assert sorted(m["Body"] for m in left) == sorted({f"m{i}" for i in range(20)} - set(invoked[0]))
