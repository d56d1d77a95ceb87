"""FrontierQueue: SQS as the frontier. Sends in batches of ten; a deferral is a re-send with a delay.

Deferring by re-sending (not by failing the record) keeps the receive count meaningful: only real failures
move a URL towards the dead-letter queue, never politeness waits.
"""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from seolens_core.adapters._gather import CallGroup, all_or_cancel
from seolens_core.frontier import FrontierMessage

MAX_SQS_DELAY_S = 900


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A message to send; `not_before` (epoch seconds) becomes its DelaySeconds at the moment it is sent."""

    message: FrontierMessage
    not_before: float = 0.0

    def delay_s(self, now: float) -> int:
        """Whole seconds (SQS's unit), to the nearest: a message comes back within half a second of
        `not_before` instead of up to a second late. A time still ahead is never rounded to 0 (a message
        that would come back at once, find its condition unchanged and be re-sent, over and over)."""
        ahead = self.not_before - now
        if ahead <= 0:
            return 0
        return max(1, min(MAX_SQS_DELAY_S, math.floor(ahead + 0.5)))

    def body(self, now: float) -> str:
        """The message to send; one further ahead than SQS can delay it carries `not_before`, so that it is
        sent on when it comes back early instead of asking the host again (a long Retry-After block)."""
        if self.not_before - now > MAX_SQS_DELAY_S:
            return replace(self.message, not_before=self.not_before).to_json()
        return self.message.to_json()


class SendFailed(RuntimeError):
    """Some messages could not be sent after retries; the caller must not acknowledge their source."""


class FrontierQueue:
    def __init__(self, client: Any, queue_url: str) -> None:
        self._client = client
        self._url = queue_url

    async def send(self, outgoing: Sequence[Outgoing]) -> None:
        chunks = [outgoing[i : i + 10] for i in range(0, len(outgoing), 10)]
        await all_or_cancel(*(self._send_chunk(c) for c in chunks))

    async def _send_chunk(self, chunk: Sequence[Outgoing]) -> None:
        now = time.time()
        entries = {
            uuid.uuid4().hex: {"MessageBody": o.body(now), "DelaySeconds": o.delay_s(now)} for o in chunk
        }
        for attempt in range(6):
            resp = await self._client.send_message_batch(
                QueueUrl=self._url, Entries=[{"Id": i, **e} for i, e in entries.items()]
            )
            failed = {f["Id"] for f in resp.get("Failed", [])}
            entries = {i: e for i, e in entries.items() if i in failed}
            if not entries:
                return
            await asyncio.sleep(0.05 * 2**attempt)
        raise SendFailed(f"{len(entries)} frontier messages could not be sent")

    async def peek(self, max_messages: int = 1000, visibility_s: int = 30) -> list[str]:
        """Bodies of up to `max_messages` messages, left on the queue (they reappear after `visibility_s`)."""
        bodies: list[str] = []
        while len(bodies) < max_messages:
            resp = await self._client.receive_message(
                QueueUrl=self._url, MaxNumberOfMessages=10, VisibilityTimeout=visibility_s, WaitTimeSeconds=0
            )
            batch = resp.get("Messages", [])
            if not batch:
                break
            bodies.extend(m["Body"] for m in batch)
        return bodies


class SendGroup:
    """Sends made within `window_s` of each other go out together (SendMessageBatch, ten per call).

    The records of one SQS batch that find no pacing slot give up at about the same moment (their local
    waits started together): one call for all of them instead of one each, and no burst of calls that
    delays the requests other records are about to send. Each caller returns once its message is sent, and
    sees the error if the send failed.
    """

    def __init__(self, queue: FrontierQueue, window_s: float = 0.05) -> None:
        async def send_all(items: list[Outgoing]) -> list[None]:
            await queue.send(items)
            return [None] * len(items)

        self._group: CallGroup[Outgoing, None] = CallGroup(send_all, window_s)

    async def send(self, outgoing: Outgoing) -> None:
        await self._group.call(outgoing)

    def submit(self, outgoing: Outgoing) -> Awaitable[None]:
        """Join the group now; await the result to know the message was sent (`flush` sends it at once)."""
        return self._group.submit(outgoing)

    def flush(self) -> None:
        """Send what the group holds now instead of at the end of its window."""
        self._group.flush()
