"""httpcore on asyncio's locks, event and semaphore, without anyio's cancellation shield."""

from __future__ import annotations

import asyncio
import time

import anyio
import httpcore
import httpx
import pytest
from httpcore._async import connection, connection_pool, http2, http11

from seolens_core.fetch._pool import pooled_transport
from seolens_core.fetch._sync import AsyncioEvent, AsyncioLock, AsyncioSemaphore, NoShield


def test_building_the_fetch_pool_points_httpcore_at_asyncios_primitives() -> None:
    for _ in range(2):  # idempotent
        pooled_transport(http2=True, limits=httpx.Limits(max_connections=2))
        assert connection.AsyncLock is AsyncioLock
        assert http11.AsyncLock is AsyncioLock and http2.AsyncLock is AsyncioLock
        assert connection_pool.AsyncEvent is AsyncioEvent
        assert http2.AsyncSemaphore is AsyncioSemaphore
        assert {connection_pool.AsyncShieldCancellation, http11.AsyncShieldCancellation} == {NoShield}
        assert http2.AsyncShieldCancellation is NoShield


def test_anyios_shield_does_not_hold_off_asyncios_own_cancellation() -> None:
    """Why `NoShield` loses nothing: the fetcher's deadline is `asyncio.timeout`, which anyio's shield lets
    through (if anyio ever holds it off, this fails and `_sync.py` must shield too)."""

    async def shielded(log: list[str]) -> None:
        with anyio.CancelScope(shield=True):
            try:
                await asyncio.sleep(1)
                log.append("finished")
            except asyncio.CancelledError:
                log.append("cancelled inside the shield")
                raise

    async def go() -> list[str]:
        log: list[str] = []
        try:
            async with asyncio.timeout(0.05):
                await shielded(log)
        except TimeoutError:
            log.append("timed out")
        task = asyncio.ensure_future(shielded(log))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return log

    assert asyncio.run(go()) == ["cancelled inside the shield", "timed out", "cancelled inside the shield"]


def test_the_event_returns_once_set_and_is_a_pool_timeout_otherwise() -> None:
    async def go() -> tuple[float, float, type[BaseException] | None]:
        ready = AsyncioEvent()
        ready.set()
        started = time.perf_counter()
        await ready.wait(timeout=5)
        at_once = time.perf_counter() - started

        later = AsyncioEvent()
        asyncio.get_running_loop().call_later(0.05, later.set)
        started = time.perf_counter()
        await later.wait(timeout=5)
        woken = time.perf_counter() - started

        raised = None
        try:
            await AsyncioEvent().wait(timeout=0.05)
        except httpcore.PoolTimeout as exc:
            raised = type(exc)
        return at_once, woken, raised

    at_once, woken, raised = asyncio.run(go())
    assert at_once < 0.01
    assert 0.04 <= woken < 1
    assert raised is httpcore.PoolTimeout


def test_the_lock_excludes_and_the_semaphore_is_bounded() -> None:
    async def go() -> tuple[list[str], bool]:
        lock, order = AsyncioLock(), []

        async def hold(name: str) -> None:
            async with lock:
                order.append(f"{name} in")
                await asyncio.sleep(0.01)
                order.append(f"{name} out")

        await asyncio.gather(hold("a"), hold("b"))
        semaphore = AsyncioSemaphore(1)
        await semaphore.acquire()
        await semaphore.release()
        try:
            await semaphore.release()
        except ValueError:
            return order, True
        return order, False

    order, bounded = asyncio.run(go())
    assert order == ["a in", "a out", "b in", "b out"]
    assert bounded
