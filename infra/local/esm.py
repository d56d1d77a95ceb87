"""SQS event-source-mapping emulator: concurrent pollers invoke the worker with real SQS event payloads.

moto's own SQS trigger runs one message at a time inside SendMessage and ignores ReportBatchItemFailures,
so the local runtime does what the Lambda service does: receive up to BatchSize messages, invoke, delete the
records that succeeded, and leave batch item failures to reappear after their visibility timeout.
"""

from __future__ import annotations

import logging
import math
import queue
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import boto3

from infra.local import faults
from seolens_core.adapters._metering import GLOBAL_METER

log = logging.getLogger("seolens.local.esm")

SQS_RECEIVE_MAX = 10
AHEAD_POLL_S = 0.1
"""How often a poller waiting for its next batch, or a receiver waiting to hand one over, looks at `stop`."""
THIN_QUEUE_POLL_S = 0.25
"""While a thin batch waits out its window (`wait_out_window`): how often the queue is asked again."""


@dataclass
class PollerStats:
    batches: int = 0
    records: int = 0
    failed_records: int = 0
    handler_errors: int = 0
    in_flight: int = 0
    cpu_s: float = 0.0
    """CPU time of the service's side of the mapping: receives, deletes and, when the function runs in another
    process, the hand-off to it (in the cloud the Lambda service's pollers do this, not the function)."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add_cpu(self, seconds: float) -> None:
        with self.lock:
            self.cpu_s += seconds


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
        receive_ahead: bool = False,
        wait_out_window: bool = False,
        invokes_elsewhere: bool = False,
    ) -> None:
        """`reorder` (0..1) emulates a standard queue's lack of order: that share of received messages is put
        back for 1-3 s instead of being processed, so later messages overtake them (moto itself is FIFO-like).
        `idle_pause_s`: after an empty receive, wait this long before the next (a queue that is mostly empty,
        like the dead-letter queue, is not polled every second).
        `batching_window_s` (MaximumBatchingWindowInSeconds): a batch larger than one receive (10) is gathered
        from further receives within the window, while each comes back full.
        `receive_ahead`: each poller's next batch is received while its environment runs the current one, and
        the records that succeeded are deleted while it runs the next, as the Lambda service's pollers work
        apart from the functions they invoke. Polling in turn left each environment idle for ~15% of a
        20,000-page crawl (docs/PERFORMANCE.md, 2026-12-04 evening).
        `wait_out_window`: a batch the queue cannot fill at once keeps gathering until the batching window
        ends, as the Lambda service buffers records (fewer, fuller invocations; the first record waits up to
        the window). Off, a short receive sends the batch at once.
        `invokes_elsewhere`: `invoke` runs the function in another process, so a poller's own CPU is the
        service's alone and counts in `stats.cpu_s` (receivers and deletes always do)."""
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
        self._receive_ahead = receive_ahead
        self._wait_out_window = wait_out_window
        self._invokes_elsewhere = invokes_elsewhere
        self._ahead: list[queue.Queue[list[dict[str, Any]]]] = []
        self._deletes: ThreadPoolExecutor | None = None
        self._clients = threading.local()
        self.stats = PollerStats()

    def start(self) -> None:
        if self._receive_ahead:
            self._deletes = ThreadPoolExecutor(self._workers, thread_name_prefix="esm-delete")
        for i in range(self._workers):
            if self._receive_ahead:
                ahead: queue.Queue[list[dict[str, Any]]] = queue.Queue(maxsize=1)
                self._ahead.append(ahead)
                receiver = threading.Thread(
                    target=self._receive_into, args=(ahead,), name=f"esm-receiver-{i}", daemon=True
                )
                receiver.start()
                self._threads.append(receiver)
            thread = threading.Thread(target=self._run, args=(i,), name=f"esm-poller-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def signal_stop(self) -> None:
        """Ask the pollers to stop after what they are doing (`stop` waits for them)."""
        self._stop.set()

    def stop(self, timeout: float = 60.0) -> None:
        """Stop polling; batches received ahead and never invoked go back to the queue at once (visible again),
        and the deletes under way finish."""
        self._stop.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.1, deadline - time.monotonic()))
        unused = [m for ahead in self._ahead for m in _drain(ahead)]
        if unused:
            self._return_now(self._client(), unused)
        if self._deletes is not None:
            self._deletes.shutdown(wait=True)

    @property
    def in_flight(self) -> int:
        return self.stats.in_flight

    def _client(self) -> Any:
        """This thread's SQS client. The event source mapping's own receives and deletes are billed on AWS too:
        they are metered."""
        sqs = getattr(self._clients, "sqs", None)
        if sqs is None:
            sqs = self._clients.sqs = GLOBAL_METER.attach(
                boto3.client("sqs", endpoint_url=self._endpoint_url, region_name=self._region)
            )
        return sqs

    def _run(self, index: int = 0) -> None:
        started = time.thread_time()
        sqs = self._client()
        try:
            while not self._stop.is_set():
                try:
                    if self._receive_ahead:
                        try:
                            messages = self._ahead[index].get(timeout=AHEAD_POLL_S)
                        except queue.Empty:
                            continue
                        self._run_batch(sqs, messages)
                    elif self._poll_once(sqs) == 0 and self._idle_pause_s:
                        self._stop.wait(self._idle_pause_s)
                except Exception:  # the emulated service keeps polling, as Lambda's would
                    log.exception("poller error")
                    time.sleep(0.5)
        finally:
            if self._invokes_elsewhere:
                self.stats.add_cpu(time.thread_time() - started)
            if self._on_thread_exit is not None:
                self._on_thread_exit()

    def _receive_into(self, ahead: queue.Queue[list[dict[str, Any]]]) -> None:
        """A receiver: the next batch of one poller, received while the poller's environment is busy."""
        started = time.thread_time()
        try:
            self._receive_loop(ahead)
        finally:
            self.stats.add_cpu(time.thread_time() - started)

    def _receive_loop(self, ahead: queue.Queue[list[dict[str, Any]]]) -> None:
        sqs = self._client()
        while not self._stop.is_set():
            try:
                messages = self._receive_for_invoke(sqs)
            except Exception:
                log.exception("poller error")
                time.sleep(0.5)
                continue
            if not messages:
                if self._idle_pause_s:
                    self._stop.wait(self._idle_pause_s)
                continue
            while True:
                try:
                    ahead.put(messages, timeout=AHEAD_POLL_S)
                    break
                except queue.Full:
                    if self._stop.is_set():
                        self._return_now(sqs, messages)
                        return

    def _poll_once(self, sqs: Any) -> int:
        """Receive one batch and run it; returns how many messages it had."""
        messages = self._receive_for_invoke(sqs)
        if not messages:
            return 0
        return self._run_batch(sqs, messages)

    def _receive_for_invoke(self, sqs: Any) -> list[dict[str, Any]]:
        messages = self._receive_batch(sqs)
        if messages and self._reorder > 0:
            messages = self._put_some_back(sqs, messages)
        return messages

    def _run_batch(self, sqs: Any, messages: list[dict[str, Any]]) -> int:
        """Invoke the function with `messages` and delete the records that succeeded; returns their count."""
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
            if self._deletes is not None:
                self._deletes.submit(self._delete_logged, done)
            else:
                self._delete(sqs, done)
            with self.stats.lock:
                self.stats.batches += 1
                self.stats.records += len(messages)
                self.stats.failed_records += len(failed_ids)
            return len(messages)
        finally:
            with self.stats.lock:
                self.stats.in_flight -= len(messages)

    def _delete(self, sqs: Any, messages: list[dict[str, Any]]) -> None:
        for start in range(0, len(messages), 10):
            chunk = messages[start : start + 10]
            sqs.delete_message_batch(
                QueueUrl=self._queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)],
            )

    def _delete_logged(self, messages: list[dict[str, Any]]) -> None:
        """A delete behind the next invocation: a failure leaves the records to come back after their
        visibility timeout (the fetch side drops a URL already done), as a lost delete would."""
        started = time.thread_time()
        try:
            self._delete(self._client(), messages)
        except Exception:
            log.exception(
                "delete of %d processed records failed; they will be delivered again", len(messages)
            )
        finally:
            self.stats.add_cpu(time.thread_time() - started)

    def _return_now(self, sqs: Any, messages: list[dict[str, Any]]) -> None:
        """Messages received and never invoked: visible again at once rather than after their timeout."""
        for start in range(0, len(messages), 10):
            chunk = messages[start : start + 10]
            try:
                sqs.change_message_visibility_batch(
                    QueueUrl=self._queue_url,
                    Entries=[
                        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}
                        for i, m in enumerate(chunk)
                    ],
                )
            except Exception:  # they come back after their visibility timeout instead
                log.exception("could not return %d unused messages", len(chunk))

    def _receive_batch(self, sqs: Any) -> list[dict[str, Any]]:
        """Up to BatchSize messages, as the Lambda service gathers them: SQS returns at most 10 per receive, so
        a larger batch takes further receives within the batching window, which starts with the first record.
        A receive that comes back short means the queue is drained for now: the batch goes at once, or, with
        `wait_out_window`, when the window ends (one more receive every `THIN_QUEUE_POLL_S` until then)."""
        messages: list[dict[str, Any]] = []
        wait_s = self._wait_time_s
        window_ends = math.inf
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
            if not messages and got:
                window_ends = time.monotonic() + self._batching_window_s
            messages.extend(got)
            left = window_ends - time.monotonic()
            if not messages or left <= 0:
                break
            thin = len(got) < want
            if thin and (not self._wait_out_window or self._stop.wait(min(left, THIN_QUEUE_POLL_S))):
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


def _drain(ahead: queue.Queue[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    while True:
        try:
            messages.extend(ahead.get_nowait())
        except queue.Empty:
            return messages
