"""Coalescing of one container's reservations and releases per host: fewer writes on the host's item.

A Lambda container fetches an SQS batch concurrently, so with one host up to ten coroutines ask for a slot
at the same moment and give slots back a few milliseconds apart. `CoalescingPacing` groups them:

- reserve: calls for one host queue behind the one write in flight for it (group commit); when it lands,
  the next caller in line takes every request queued meanwhile into ONE `reserve_many` (k consecutive
  slots in one conditional write). Each caller gets its own Granted or Deferred. The first caller of an
  idle host waits `gather_s` before it writes, so the records that asked with it share its write.
- release: returns of one host that come while a return write for it is in flight (group commit), or
  within `release_window_s` of the first (0: no added wait), go in ONE `release_many`. A distress
  observation (429/503/WAF) is never held back: it sends its batch at once, so the host is blocked or
  backed off as soon as without coalescing.

Politeness does not depend on the grouping: every slot is still decided by the pure `reserve_group`
on the stored state and written under a condition on it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ._observation import Observation
from ._reservation import Granted, Reservation, SlotRequest
from ._state import HostPoliteness

RELEASE_WINDOW_S = 0.03
"""Default: how long the first return of a host waits for others to share its write."""
RESERVE_GATHER_S = 0.002
"""Default: how long the first reservation of an idle host waits for the others asking at the same time (a
batch's records reach their reservation a few hundred microseconds apart; without it the first went alone)."""
MAX_GROUP = 25
"""Most requests in one reserve write (an UpdateItem expression names each lease)."""


@runtime_checkable
class BatchHostPacing(Protocol):
    """A HostPacing store that also reserves and releases for several callers in one operation."""

    async def reserve_many(self, host: str, requests: Sequence[SlotRequest]) -> Sequence[Reservation]: ...

    async def release_many(
        self, host: str, returns: Sequence[tuple[str, Observation | None]]
    ) -> HostPoliteness: ...

    async def slide(
        self, host: str, lease_id: str, start_at: float, *, lease_ttl_s: float
    ) -> Granted | None: ...

    async def set_floor(self, host: str, floor_ms: int) -> HostPoliteness: ...

    async def get(self, host: str) -> HostPoliteness | None: ...


@dataclass(eq=False, slots=True)
class _Ask:
    request: SlotRequest
    answer: asyncio.Future[Reservation]


@dataclass(eq=False, slots=True)
class _Returns:
    done: asyncio.Future[HostPoliteness]
    items: list[tuple[str, Observation | None]] = field(default_factory=list)
    urgent: asyncio.Event = field(default_factory=asyncio.Event)


class CoalescingPacing:
    """The HostPacing port over a `BatchHostPacing`, coalescing concurrent calls of one event loop.

    `reserve_writes` and `release_writes` count the grouped calls made, `reserved` and `released` the
    callers served (their ratio is the coalescing achieved).
    """

    def __init__(
        self,
        inner: BatchHostPacing,
        *,
        release_window_s: float = RELEASE_WINDOW_S,
        gather_s: float = RESERVE_GATHER_S,
    ) -> None:
        if release_window_s < 0 or gather_s < 0:
            raise ValueError("release_window_s and gather_s must be >= 0")
        self.inner = inner
        self._window = release_window_s
        self._gather_s = gather_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queues: dict[str, list[_Ask]] = {}
        self._turns: dict[str, asyncio.Lock] = {}
        self._returns: dict[str, _Returns] = {}
        self._inflight: dict[str, int] = {}
        """Per host: return writes in flight."""
        self._idles: dict[str, asyncio.Event] = {}
        self._tasks: set[asyncio.Task[object]] = set()
        self.reserve_writes = self.reserved = self.release_writes = self.released = 0

    # --- the HostPacing port ---------------------------------------------------------------------

    async def reserve(
        self, host: str, lease_id: str, *, lease_ttl_s: float, max_local_wait_s: float
    ) -> Reservation:
        loop = self._bind_loop()
        ask = _Ask(SlotRequest(lease_id, lease_ttl_s, max_local_wait_s), loop.create_future())
        queue = self._queues.setdefault(host, [])
        queue.append(ask)
        turn = self._turns.setdefault(host, asyncio.Lock())
        try:
            async with turn:
                if not ask.answer.done():
                    if self._gather_s:
                        await asyncio.sleep(self._gather_s)
                    await self._lead(host)
            return await ask.answer
        except asyncio.CancelledError:
            with contextlib.suppress(ValueError):
                queue.remove(ask)
            # A slot taken for us that nobody will use goes back (now, or when the write lands).
            ask.answer.add_done_callback(lambda f: self._give_back(host, lease_id, f))
            raise

    async def release(
        self,
        host: str,
        lease_id: str,
        observation: Observation | None,
        *,
        carried: Sequence[Observation] = (),
    ) -> HostPoliteness:
        """Give the slot back with what its request saw; `carried`: what earlier requests made in the same
        slot saw (a slot kept for reuse, see `PacingGate`), folded in first."""
        loop = self._bind_loop()
        items = [(lease_id, o) for o in carried] + [(lease_id, observation)]
        urgent = any(o is not None and o.is_distress for _, o in items)
        batch = self._returns.get(host)
        if batch is not None:  # a batch is gathering: ride along (a distress return sends it now)
            batch.items.extend(items)
            if urgent:
                batch.urgent.set()
            return await asyncio.shield(batch.done)
        batch = _Returns(done=loop.create_future(), items=items)
        if not urgent:
            self._returns[host] = batch
            try:
                await self._gather(host, batch)
            finally:
                del self._returns[host]
        self.release_writes += 1
        self.released += len({lease for lease, _ in batch.items})
        self._inflight[host] = self._inflight.get(host, 0) + 1
        try:
            state = await self.inner.release_many(host, batch.items)
        except BaseException as exc:
            batch.done.set_exception(exc)
            batch.done.exception()  # retrieved here; the riders re-raise it
            raise
        finally:
            self._inflight[host] -= 1
            if not self._inflight[host]:
                self._idle(host).set()
        batch.done.set_result(state)
        return state

    async def _gather(self, host: str, batch: _Returns) -> None:
        """Let returns join `batch`: for the window, then while a return write of `host` is in flight
        (group commit: no added wait on an idle host); a distress return ends the wait at once."""
        if self._window > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(batch.urgent.wait(), self._window)
        while self._inflight.get(host, 0) and not batch.urgent.is_set():
            idle = self._idle(host)
            idle.clear()
            waits = {asyncio.ensure_future(idle.wait()), asyncio.ensure_future(batch.urgent.wait())}
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waits:
                    w.cancel()

    def _idle(self, host: str) -> asyncio.Event:
        return self._idles.setdefault(host, asyncio.Event())

    async def slide(self, host: str, lease_id: str, start_at: float, *, lease_ttl_s: float) -> Granted | None:
        return await self.inner.slide(host, lease_id, start_at, lease_ttl_s=lease_ttl_s)

    async def set_floor(self, host: str, floor_ms: int) -> HostPoliteness:
        return await self.inner.set_floor(host, floor_ms)

    async def get(self, host: str) -> HostPoliteness | None:
        return await self.inner.get(host)

    # --- plumbing --------------------------------------------------------------------------------

    async def _lead(self, host: str) -> None:
        """Take every request queued for `host` (up to MAX_GROUP) into one `reserve_many`.

        The write runs as its own task: cancelling the leader does not lose the others' answers."""
        queue = self._queues.get(host, [])
        group, queue[:] = queue[:MAX_GROUP], queue[MAX_GROUP:]
        self.reserve_writes += 1
        self.reserved += len(group)
        task = asyncio.get_running_loop().create_task(
            self.inner.reserve_many(host, [a.request for a in group])
        )

        def answer(t: asyncio.Task[Sequence[Reservation]]) -> None:
            if t.cancelled():
                for a in group:
                    a.answer.cancel()
            elif (exc := t.exception()) is not None:
                for a in group:
                    a.answer.set_exception(exc)
                    a.answer.exception()  # retrieved: each caller re-raises it
            else:
                for a, r in zip(group, t.result(), strict=True):
                    a.answer.set_result(r)

        task.add_done_callback(answer)
        await asyncio.shield(task)

    def _give_back(self, host: str, lease_id: str, answer: asyncio.Future[Reservation]) -> None:
        if answer.cancelled() or answer.exception() is not None:
            return
        if isinstance(answer.result(), Granted):
            task = asyncio.get_running_loop().create_task(self.inner.release_many(host, [(lease_id, None)]))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _bind_loop(self) -> asyncio.AbstractEventLoop:
        """Locks and futures bind to an event loop; a warm container may run each invocation on a new one."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._queues, self._turns, self._returns = loop, {}, {}, {}
            self._inflight, self._idles = {}, {}
        return loop
