"""httpcore's locks, event, semaphore and cancellation shield on asyncio's own primitives.

httpcore picks anyio's under asyncio: every request takes three anyio locks, waits on an anyio event inside
a `fail_after` scope and opens three shielded cancel scopes while its response closes, each looking up the
running task (~4% of the crawler's CPU a page, py-spy). anyio's shield does not hold off asyncio's own
cancellation (`asyncio.timeout`, `Task.cancel`: measured in the tests), the only kind the fetcher uses, and
with the streams on asyncio (`_stream.py`) no anyio scope is left on the fetch path: the shield only costs.
httpcore offers no setting for this, so `use_asyncio_primitives` replaces the names its modules look up.
"""

from __future__ import annotations

import asyncio
import types

import httpcore
from httpcore._async import connection, connection_pool, http2, http11

__all__ = [
    "AsyncioEvent",
    "AsyncioLock",
    "AsyncioSemaphore",
    "NoShield",
    "use_asyncio_primitives",
]


class AsyncioLock:
    """httpcore's `AsyncLock` (`async with`) as an `asyncio.Lock`."""

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> AsyncioLock:
        await self._lock.acquire()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: types.TracebackType | None = None,
    ) -> None:
        self._lock.release()


class AsyncioEvent:
    """httpcore's `AsyncEvent`: a pool request waits for its connection, `PoolTimeout` after `timeout`."""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def set(self) -> None:
        self._event.set()

    async def wait(self, timeout: float | None = None) -> None:
        if self._event.is_set():  # the usual case: the pool assigned a connection before the request waits
            return
        try:
            async with asyncio.timeout(timeout):
                await self._event.wait()
        except TimeoutError as exc:
            raise httpcore.PoolTimeout("no connection of the pool came free in time") from exc


class AsyncioSemaphore:
    """httpcore's `AsyncSemaphore` (HTTP/2's concurrent streams), bounded as anyio's is."""

    __slots__ = ("_semaphore",)

    def __init__(self, bound: int) -> None:
        self._semaphore = asyncio.BoundedSemaphore(bound)

    async def acquire(self) -> None:
        await self._semaphore.acquire()

    async def release(self) -> None:
        self._semaphore.release()


class NoShield:
    """httpcore's `AsyncShieldCancellation` under asyncio: nothing to do (see the module's docstring)."""

    __slots__ = ()

    def __enter__(self) -> NoShield:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: types.TracebackType | None = None,
    ) -> None:
        return None


_REPLACEMENTS: dict[str, type] = {
    "AsyncLock": AsyncioLock,
    "AsyncEvent": AsyncioEvent,
    "AsyncSemaphore": AsyncioSemaphore,
    "AsyncShieldCancellation": NoShield,
}
_MODULES: dict[types.ModuleType, tuple[str, ...]] = {
    connection: ("AsyncLock",),
    connection_pool: ("AsyncEvent", "AsyncShieldCancellation"),
    http11: ("AsyncLock", "AsyncShieldCancellation"),
    http2: ("AsyncLock", "AsyncSemaphore", "AsyncShieldCancellation"),
}


def use_asyncio_primitives() -> None:
    """Point httpcore's connection, pool, HTTP/1.1 and HTTP/2 modules at the classes above (idempotent).

    The process runs httpcore on asyncio only (each Lambda container runs one event loop). Raises
    RuntimeError when httpcore no longer looks these names up where 1.0 does, rather than run half-replaced.
    """
    missing = [f"{m.__name__}.{n}" for m, names in _MODULES.items() for n in names if not hasattr(m, n)]
    if missing:
        raise RuntimeError(f"httpcore no longer uses {', '.join(missing)}")
    for module, names in _MODULES.items():
        for name in names:
            setattr(module, name, _REPLACEMENTS[name])
