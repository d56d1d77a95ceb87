"""CallGroup: calls made within a short window of each other run as one batched call.
SingleFlight: concurrent calls for one key share the one in flight.
read_ahead: an ordered stream of fetches, a few in flight at once.
all_or_cancel: calls at once; the first failure cancels the rest.
all_settled: calls at once; each runs to its end before the first failure is raised."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections import deque
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Sequence,
)
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")
K = TypeVar("K")


class SingleFlight(Generic[K, R]):
    """Callers asking for one key while its call is in flight share that call (ten records of a batch
    meeting a host for the first time make one read, not ten); a call after it has landed runs anew."""

    def __init__(self) -> None:
        self._flights: dict[K, asyncio.Task[R]] = {}

    async def run(self, key: K, call: Callable[[], Awaitable[R]]) -> R:
        loop = asyncio.get_running_loop()
        task = self._flights.get(key)
        if task is None or task.get_loop() is not loop:  # a warm container may run each invocation anew
            task = loop.create_task(_awaited(call))
            self._flights[key] = task
            task.add_done_callback(lambda done: self._landed(key, done))
        return await asyncio.shield(task)

    def _landed(self, key: K, task: asyncio.Task[R]) -> None:
        if self._flights.get(key) is task:
            del self._flights[key]
        if not task.cancelled():
            task.exception()  # retrieved: every caller re-raises it


async def _awaited(call: Callable[[], Awaitable[R]]) -> R:
    return await call()


class CallGroup(Generic[T, R]):
    """Items asked for within `window_s` of the first go to one `run(items)`, which answers one result per
    item, in order. Each caller gets its own result, or the error if the batched call failed."""

    def __init__(self, run: Callable[[list[T]], Awaitable[Sequence[R]]], window_s: float) -> None:
        self._run = run
        self._window_s = window_s
        self._pending: _Group[T, R] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def call(self, item: T) -> R:
        return await self.submit(item)

    def submit(self, item: T) -> Awaitable[R]:
        """Add `item` to the group now (a `flush` right after includes it); await the answer for its result."""
        loop = asyncio.get_running_loop()
        if self._pending is not None and self._pending.done.get_loop() is not loop:
            self._pending = None  # opened on a loop that stopped before its run (a cut-off invocation)
        if self._pending is None:
            self._pending = _Group(loop.create_future())
            task = loop.create_task(self._run_later(self._pending))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        group = self._pending
        group.items.append(item)
        return _result_of(group.done, len(group.items) - 1)

    def flush(self) -> None:
        """Run the items gathered so far now, without waiting out the rest of the window."""
        if self._pending is not None:
            self._pending.go.set()

    async def _run_later(self, group: _Group[T, R]) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._window_s):
                await group.go.wait()
        if self._pending is group:
            self._pending = None
        items, done = group.items, group.done
        try:
            results = await self._run(items)
        except BaseException as exc:
            done.set_exception(exc)
            done.exception()  # retrieved here; every caller re-raises it
            if not isinstance(exc, Exception):
                raise
        else:
            if len(results) != len(items):
                done.set_exception(RuntimeError(f"{len(results)} results for {len(items)} items"))
                done.exception()
                return
            done.set_result(results)


@dataclass(eq=False, slots=True)
class _Group(Generic[T, R]):
    done: asyncio.Future[Sequence[R]]
    items: list[T] = field(default_factory=list)
    go: asyncio.Event = field(default_factory=asyncio.Event)


async def _result_of(done: asyncio.Future[Sequence[R]], index: int) -> R:
    return (await asyncio.shield(done))[index]


async def read_ahead(
    keys: AsyncIterable[K] | Iterable[K], fetch: Callable[[K], Awaitable[R]], depth: int
) -> AsyncGenerator[tuple[K, R], None]:
    """(key, fetch(key)) in the order of `keys`, with up to `depth` fetches in flight: a sequential reader of
    thousands of S3 objects waits out each round trip in turn (on one machine, the client and the emulator
    take turns on the CPU). Fetches still in flight when the consumer stops are cancelled."""
    loop = asyncio.get_running_loop()
    flying: deque[tuple[K, asyncio.Task[R]]] = deque()
    source = _each(keys).__aiter__()
    exhausted = False
    try:
        while True:
            while not exhausted and len(flying) < depth:
                try:
                    key = await source.__anext__()
                except StopAsyncIteration:
                    exhausted = True
                    break
                flying.append((key, loop.create_task(_awaited(functools.partial(fetch, key)))))
            if not flying:
                return
            key, task = flying.popleft()
            yield key, await task
    finally:
        for _, task in flying:
            task.cancel()
        await asyncio.gather(*(task for _, task in flying), return_exceptions=True)


async def _each(keys: AsyncIterable[K] | Iterable[K]) -> AsyncIterator[K]:
    if isinstance(keys, AsyncIterable):
        async for key in keys:
            yield key
    else:
        for key in keys:
            yield key


async def all_or_cancel(*calls: Awaitable[R]) -> list[R]:
    """The results of `calls`, run at once. The first failure is raised as it is, after the other calls are
    cancelled and awaited: `asyncio.gather` leaves them running, and a container's loop would resume them
    in its next invocation, next to the retry of the step that failed (`TaskGroup` would raise a group)."""
    tasks = [asyncio.ensure_future(call) for call in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def all_settled(*calls: Awaitable[R]) -> list[R]:
    """The results of `calls`, run at once. Every call runs to its end, then the first failure (in the order
    of `calls`) is raised as it is: for calls whose work must not wait for a next invocation (slots kept for
    a host go back even when the batch's writes failed)."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return list(results)  # type: ignore[arg-type]
