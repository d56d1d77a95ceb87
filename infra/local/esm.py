"""SQS event-source-mapping emulator: concurrent pollers invoke the worker with real SQS event payloads.

moto's own SQS trigger runs one message at a time inside SendMessage and ignores ReportBatchItemFailures,
so the local runtime does what the Lambda service does: receive up to BatchSize messages, invoke, delete the
records that succeeded, and leave batch item failures to reappear after their visibility timeout.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3

from infra.local import faults
from seolens_core.adapters._metering import GLOBAL_METER

log = logging.getLogger("seolens.local.esm")

SQS_RECEIVE_MAX = 10


@dataclass
class PollerStats:
    batches: int = 0
    records: int = 0
    failed_records: int = 0
    handler_errors: int = 0
    in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


class EventSourceMapping:
    """`workers` pollers on one queue, each an emulated Lambda execution environment (its own thread)."""

    def __init__(
        self,
        *,
        queue_url: str,
        queue_arn: str,
        invoke: Callable[[dict[str, Any]], Any],
        endpoint_url: str | None,
        region: str,
        batch_size: int = 10,
        workers: int = 4,
        wait_time_s: int = 1,
        on_thread_exit: Callable[[], None] | None = None,
        reorder: float = 0.0,
        seed: int | None = None,
        idle_pause_s: float = 0.0,
        batching_window_s: float = 0.0,
    ) -> None:
        """`reorder` (0..1) emulates a standard queue's lack of order: that share of received messages is put
        back for 1-3 s instead of being processed, so later messages overtake them (moto itself is FIFO-like).
        `idle_pause_s`: after an empty receive, wait this long before the next (a queue that is mostly empty,
        like the dead-letter queue, is not polled every second).
        `batching_window_s` (MaximumBatchingWindowInSeconds): a batch larger than one receive (10) is gathered
        from further receives within the window, while each comes back full."""
        self._queue_url = queue_url
        self._queue_arn = queue_arn
        self._invoke = invoke
        self._endpoint_url = endpoint_url
        self._region = region
        self._batch_size = batch_size
        self._workers = workers
        self._wait_time_s = wait_time_s
        self._on_thread_exit = on_thread_exit
        self._reorder = reorder
        self._idle_pause_s = idle_pause_s
        self._batching_window_s = batching_window_s
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.stats = PollerStats()

    def start(self) -> None:
        for i in range(self._workers):
            thread = threading.Thread(target=self._run, name=f"esm-poller-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 60.0) -> None:
        self._stop.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.1, deadline - time.monotonic()))

    @property
    def in_flight(self) -> int:
        return self.stats.in_flight

    def _run(self) -> None:
        # The event source mapping's own receives and deletes are billed on AWS too: meter them.
        sqs = GLOBAL_METER.attach(
            boto3.client("sqs", endpoint_url=self._endpoint_url, region_name=self._region)
        )
        try:
            while not self._stop.is_set():
                try:
                    if self._poll_once(sqs) == 0 and self._idle_pause_s:
                        self._stop.wait(self._idle_pause_s)
                except Exception:  # the emulated service keeps polling, as Lambda's would
                    log.exception("poller error")
                    time.sleep(0.5)
        finally:
            if self._on_thread_exit is not None:
                self._on_thread_exit()

    def _poll_once(self, sqs: Any) -> int:
        """Receive one batch and run it; returns how many messages it had."""
        messages = self._receive_batch(sqs)
        if messages and self._reorder > 0:
            messages = self._put_some_back(sqs, messages)
        if not messages:
            return 0
        with self.stats.lock:
            self.stats.in_flight += len(messages)
        try:
            event = {"Records": [self._record(m) for m in messages]}
            injector = faults.current()
            failed_ids: set[str]
            try:
                result = self._invoke(event)
                if injector is not None and injector.settings.duplicate_delivery:
                    # at-least-once: the same records arrive again (as after a lost delete)
                    with self.stats.lock:
                        injector.log.duplicate_invocations += 1
                    result = self._invoke(event)
                failures = (result or {}).get("batchItemFailures", [])
                failed_ids = {f["itemIdentifier"] for f in failures}
            except faults.InjectedCrash as crash:
                log.info("injected crash (%s); the batch of %d returns", crash.point, len(messages))
                self._redeliver_soon(sqs, messages, injector)
                with self.stats.lock:
                    self.stats.handler_errors += 1
                return len(messages)
            except Exception:
                log.exception(
                    "fetch worker invocation failed; the whole batch returns after its visibility timeout"
                )
                if injector is not None:
                    self._redeliver_soon(sqs, messages, injector)
                with self.stats.lock:
                    self.stats.handler_errors += 1
                return len(messages)
            done = [m for m in messages if m["MessageId"] not in failed_ids]
            for start in range(0, len(done), 10):
                chunk = done[start : start + 10]
                sqs.delete_message_batch(
                    QueueUrl=self._queue_url,
                    Entries=[
                        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)
                    ],
                )
            with self.stats.lock:
                self.stats.batches += 1
                self.stats.records += len(messages)
                self.stats.failed_records += len(failed_ids)
            return len(messages)
        finally:
            with self.stats.lock:
                self.stats.in_flight -= len(messages)

    def _receive_batch(self, sqs: Any) -> list[dict[str, Any]]:
        """Up to BatchSize messages, as the Lambda service gathers them: SQS returns at most 10 per receive, so
        a larger batch takes further receives within the batching window. A receive that comes back short
        means the queue is drained for now: the batch goes at once (the service may wait out the window;
        locally that would only add latency)."""
        started = time.monotonic()
        messages: list[dict[str, Any]] = []
        wait_s = self._wait_time_s
        while len(messages) < self._batch_size:
            want = min(SQS_RECEIVE_MAX, self._batch_size - len(messages))
            resp = sqs.receive_message(
                QueueUrl=self._queue_url,
                MaxNumberOfMessages=want,
                WaitTimeSeconds=wait_s,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
            got = resp.get("Messages", [])
            messages.extend(got)
            if len(got) < want or time.monotonic() - started >= self._batching_window_s:
                break
            wait_s = 0
        return messages

    def _redeliver_soon(
        self, sqs: Any, messages: list[dict[str, Any]], injector: faults.FaultInjector | None
    ) -> None:
        """Under fault injection a failed batch returns after `redelivery_s`, not the visibility timeout."""
        if injector is None:
            return
        for start in range(0, len(messages), 10):
            chunk = messages[start : start + 10]
            sqs.change_message_visibility_batch(
                QueueUrl=self._queue_url,
                Entries=[
                    {
                        "Id": str(i),
                        "ReceiptHandle": m["ReceiptHandle"],
                        "VisibilityTimeout": injector.settings.redelivery_s,
                    }
                    for i, m in enumerate(chunk)
                ],
            )
        with self.stats.lock:
            injector.log.redelivered_messages += len(messages)

    def _put_some_back(self, sqs: Any, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        with self._rng_lock:
            # Never past the second receive: emulated disorder must not push a URL towards the dead-letter queue.
            back = [
                (m, self._rng.randint(1, 3))
                for m in messages
                if int(m.get("Attributes", {}).get("ApproximateReceiveCount", "1")) <= 2
                and self._rng.random() < self._reorder
            ]
        for message, seconds in back:
            sqs.change_message_visibility(
                QueueUrl=self._queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=seconds
            )
        returned = {m["MessageId"] for m, _ in back}
        return [m for m in messages if m["MessageId"] not in returned]

    def _record(self, message: dict[str, Any]) -> dict[str, Any]:
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": message.get("Attributes", {}),
            "messageAttributes": message.get("MessageAttributes", {}),
            "md5OfBody": message.get("MD5OfBody", ""),
            "eventSource": "aws:sqs",
            "eventSourceARN": self._queue_arn,
            "awsRegion": self._region,
        }
