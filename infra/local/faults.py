"""Fault injection for the local runtime (off by default): crashes, duplicates, AWS throttles and timeouts.

The worker is not edited: faults enter through the seams the Lambda service and the AWS SDK already have.

- Crashes. Per worker invocation, with probability `crash_rate`, one point of `crash_points` is armed; the
  invocation dies there with `InjectedCrash` (a BaseException, so no `except Exception` in the code under test
  can swallow it). Points are botocore event hooks on the container's aiobotocore clients, plus the two ends
  of the invocation:
    start          the environment dies before the handler runs (nothing done)
    after_fetch    before the first results/enqueue write (`before-call` s3.PutObject / sqs.SendMessageBatch)
    after_results  after a results part is written (`after-call` s3.PutObject)
    after_enqueue  after discovered links are enqueued (`after-call` sqs.SendMessageBatch)
    before_delete  the handler returned but its answer was lost: nothing is deleted, the batch comes back
  A crashed environment is discarded (its pending tasks cancelled, its container reset), as Lambda replaces a
  crashed runtime. The event-source emulator then makes the batch visible again after `redelivery_s` instead
  of the queue's full visibility timeout, so a test does not wait six minutes for each crash.
- Duplicate delivery: the emulator invokes every batch twice (the second time with the same records).
- Throttling and timeouts: a `before-send` hook answers a DynamoDB/SQS/S3 request with a throttling error
  (ThrottlingException / ProvisionedThroughputExceededException / SlowDown) or raises a read timeout, at the
  chosen rates; the SDK's own retry policy (adaptive, 8 attempts) must absorb them.

Install with `with inject(FaultSettings(...)):` around `run_crawl`; `current()` is read by LambdaHost and the
event-source emulator.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ReadTimeoutError

CRASH_POINTS = ("start", "after_fetch", "after_results", "after_enqueue", "before_delete")
WORKER_FUNCTION = "FetchWorkerFunction"

# crash point -> botocore events that trigger it (on the worker's clients)
_HOOKED_POINTS: dict[str, tuple[str, ...]] = {
    "after_fetch": ("before-call.s3.PutObject", "before-call.sqs.SendMessageBatch"),
    "after_results": ("after-call.s3.PutObject",),
    "after_enqueue": ("after-call.sqs.SendMessageBatch",),
}


class InjectedCrash(BaseException):
    """The emulated execution environment died here (BaseException: nothing in the worker may catch it)."""

    def __init__(self, point: str) -> None:
        super().__init__(f"injected crash at {point}")
        self.point = point


@dataclass(frozen=True, slots=True)
class FaultSettings:
    """What to inject; all zero/False means no faults (the default everywhere)."""

    crash_rate: float = 0.0  # fraction of worker invocations that crash at one armed point
    crash_points: tuple[str, ...] = CRASH_POINTS
    duplicate_delivery: bool = False  # every batch is invoked twice
    aws_throttle_rate: float = 0.0  # fraction of DynamoDB/SQS/S3 requests answered with a throttling error
    aws_timeout_rate: float = 0.0  # fraction of requests that time out (botocore ReadTimeoutError)
    seed: int = 0
    redelivery_s: int = 1  # visibility timeout given to a crashed batch (0 would redeliver at once)
    # A worker invocation whose batch carries one of these URLs dies at start, every time (a page that kills
    # its runtime, e.g. out of memory): its messages reach the dead-letter queue, batch-mates included.
    poison_urls: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("crash_rate", "aws_throttle_rate", "aws_timeout_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be within [0, 1], got {value}")
        unknown = set(self.crash_points) - set(CRASH_POINTS)
        if unknown:
            raise ValueError(f"unknown crash points {sorted(unknown)}; known: {CRASH_POINTS}")

    @property
    def enabled(self) -> bool:
        return bool(
            self.crash_rate
            or self.duplicate_delivery
            or self.aws_throttle_rate
            or self.aws_timeout_rate
            or self.poison_urls
        )


@dataclass
class FaultLog:
    """What was injected (tests compare it with what the crawl survived)."""

    crashes: Counter[str] = field(default_factory=Counter)
    throttles: Counter[str] = field(default_factory=Counter)
    timeouts: Counter[str] = field(default_factory=Counter)
    duplicate_invocations: int = 0
    redelivered_messages: int = 0


class _Raw:
    """The raw body of a synthetic response (aiobotocore awaits `raw.read()`)."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    async def read(self) -> bytes:
        return self._body


_THROTTLE: dict[str, tuple[int, str, bytes]] = {
    "dynamodb": (
        400,
        "application/x-amz-json-1.0",
        b'{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",'
        b'"message":"injected throttling"}',
    ),
    "sqs": (
        400,
        "application/x-amz-json-1.0",
        b'{"__type":"com.amazonaws.sqs#ThrottlingException","message":"injected throttling"}',
    ),
    "s3": (
        503,
        "application/xml",
        b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>SlowDown</Code>"
        b"<Message>injected throttling</Message></Error>",
    ),
}


def _carries(event: Any, urls: tuple[str, ...]) -> bool:
    """Whether an SQS event has a record whose frontier message names one of `urls`."""
    records = event.get("Records", []) if isinstance(event, dict) else []
    return any(f'"url":"{url}"' in str(r.get("body", "")) for r in records for url in urls)


class FaultInjector:
    """Draws faults from one seeded RNG (thread-safe) and records what it injected."""

    def __init__(self, settings: FaultSettings) -> None:
        self.settings = settings
        self.log = FaultLog()
        self._rng = random.Random(settings.seed)
        self._lock = threading.Lock()
        self._armed = threading.local()

    def _draw(self) -> float:
        with self._lock:
            return self._rng.random()

    # crashes

    def arm(self, function_logical_id: str, event: Any = None) -> None:
        """Called at the start of each invocation: maybe arm one crash point for it."""
        point: str | None = None
        s = self.settings
        if function_logical_id == WORKER_FUNCTION and s.poison_urls and _carries(event, s.poison_urls):
            point = "start"
        elif (
            function_logical_id == WORKER_FUNCTION
            and s.crash_rate
            and s.crash_points
            and self._draw() < s.crash_rate
        ):
            with self._lock:
                point = self._rng.choice(s.crash_points)
        self._armed.point = point

    def disarm(self) -> None:
        self._armed.point = None

    def maybe_crash(self, point: str) -> None:
        if getattr(self._armed, "point", None) == point:
            self._armed.point = None
            with self._lock:
                self.log.crashes[point] += 1
            raise InjectedCrash(point)

    # botocore hooks

    def attach(self, client: Any) -> None:
        """Register the hooks on one aiobotocore client (idempotent per client)."""
        if getattr(client, "_seolens_faults", None) is self:
            return
        client._seolens_faults = self
        service = client.meta.service_model.service_name
        events = client.meta.events
        for point, names in _HOOKED_POINTS.items():
            for name in names:
                if name.split(".")[1] == service:
                    events.register(name, self._crash_hook(point), unique_id=f"seolens-fault-{name}")
        if service in _THROTTLE:
            events.register(
                f"before-send.{service}.*", self._send_hook(service), unique_id="seolens-fault-send"
            )

    def _crash_hook(self, point: str) -> Any:
        def hook(**_: Any) -> None:
            self.maybe_crash(point)

        return hook

    def _send_hook(self, service: str) -> Any:
        from aiobotocore.awsrequest import AioAWSResponse

        def hook(request: Any, **kwargs: Any) -> Any:
            s = self.settings
            if not (s.aws_throttle_rate or s.aws_timeout_rate):
                return None
            draw = self._draw()
            operation = kwargs.get("event_name", "").rsplit(".", 1)[-1]
            if draw < s.aws_timeout_rate:
                with self._lock:
                    self.log.timeouts[f"{service}.{operation}"] += 1
                raise ReadTimeoutError(endpoint_url=str(request.url))
            if draw < s.aws_timeout_rate + s.aws_throttle_rate:
                with self._lock:
                    self.log.throttles[f"{service}.{operation}"] += 1
                status, ctype, body = _THROTTLE[service]
                headers = {
                    "Content-Type": ctype,
                    "x-amzn-RequestId": "injected",
                    "Content-Length": str(len(body)),
                }
                return AioAWSResponse(str(request.url), status, headers, _Raw(body))
            return None

        return hook


_current: FaultInjector | None = None


def current() -> FaultInjector | None:
    """The active injector, or None (the default: no faults)."""
    return _current


@contextmanager
def inject(settings: FaultSettings) -> Iterator[FaultInjector]:
    """Activate fault injection for the local runtime for the duration of the block."""
    global _current
    previous = _current
    injector = FaultInjector(settings)
    _current = injector if settings.enabled else None
    try:
        yield injector
    finally:
        _current = previous
